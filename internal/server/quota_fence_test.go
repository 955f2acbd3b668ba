package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// fenceProc is a process of ns with one instance requesting cpu.
func fenceProc(t *testing.T, ns, name, cpu string) v4.Document {
	t.Helper()
	docs, err := v4.Parse([]byte(strings.Replace(quotaProcJSON(name, 1, cpu), `"team-a"`, fmt.Sprintf("%q", ns), 1)))
	if err != nil {
		t.Fatal(err)
	}
	return docs[0]
}

// otherServerWrite writes doc as another server's admitted write does: with the
// namespace's quota fence as it reads it now, which it moves.
func otherServerWrite(t *testing.T, doc v4.Document) {
	t.Helper()
	ctx := context.Background()
	ns := doc.Object.GetMeta().Namespace
	_, rev, err := testStore.NamespaceObjectsFenced(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	f := &store.QuotaFence{}
	f.See(ns, rev)
	if err := testStore.Create(store.WithQuotaFence(ctx, f), doc.Object, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

// A write whose namespace another server wrote between its quota check and its
// transaction is judged again against the new usage: it passes when it still fits (one
// more round), is refused with the quota's 403 when it no longer does, and ends in 409
// when the fence keeps moving under it. What it wrote is stored only when it passed.
func TestQuotaFenceRejudges(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	tests := []struct {
		name, cpu   string // what the write asks; another server's write takes 1 of 2
		keepMoving  bool   // another server writes before each round
		wantRounds  int
		wantStatus  int // 0: stored
		wantMessage string
	}{
		{name: "still fits", cpu: "1", wantRounds: 2},
		{name: "no longer fits", cpu: "1.5", wantRounds: 1, wantStatus: http.StatusForbidden,
			wantMessage: "cpu quota exceeded: 1 used + 1.5 asked > 2"},
		{name: "keeps moving", cpu: "0.1", keepMoving: true, wantRounds: quotaRetries, wantStatus: http.StatusConflict,
			wantMessage: "try again"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ns := fmt.Sprintf("fence-%d", i)
			wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/"+ns+"/quota", `{"resources":{"cpu":2}}`), http.StatusOK)
			ctx := context.Background()
			doc := fenceProc(t, ns, "mine", tc.cpu)
			a := srv.newAdmission(httptest.NewRequest(http.MethodPost, "/v1/apply", nil), opCreate, []v4.Document{doc})
			defer a.done()
			if err := admitQuota(ctx, a, targetOf(doc.Object)); err != nil {
				t.Fatal(err)
			}
			otherServerWrite(t, fenceProc(t, ns, "theirs", "1"))
			rounds := 0
			err := a.fencedWrite(ctx, func(ctx context.Context) error {
				rounds++
				if tc.keepMoving && rounds > 1 {
					otherServerWrite(t, fenceProc(t, ns, fmt.Sprintf("theirs-%d", rounds), "0"))
				}
				return srv.store.Create(ctx, doc.Object, store.Raw{})
			})
			if rounds != tc.wantRounds {
				t.Errorf("%d rounds, want %d", rounds, tc.wantRounds)
			}
			_, getErr := srv.store.Get(ctx, v4.KindProcess, ns, "mine")
			if tc.wantStatus == 0 {
				if err != nil || getErr != nil {
					t.Fatalf("write: %v, read: %v", err, getErr)
				}
				return
			}
			var ae *httpapi.Error
			if !errors.As(err, &ae) || ae.Code != tc.wantStatus || !strings.Contains(ae.Message, tc.wantMessage) {
				t.Fatalf("got %v, want %d with %q", err, tc.wantStatus, tc.wantMessage)
			}
			if !errors.Is(getErr, store.ErrNotFound) {
				t.Errorf("a refused write was stored (%v)", getErr)
			}
		})
	}
}

// Two servers of one cluster, each with its own quota locks, race writes of one
// namespace that each fit alone but not all together: no more than the quota is ever
// admitted, whichever server admits. (Without the fence, about two rounds in three
// admitted a fifth write.)
func TestQuotaExactAcrossServers(t *testing.T) {
	_, urlA := newTestServerOf(t, Config{})
	_, urlB := startTestServer(t, Config{}, testStore)
	const quota, writers, rounds = 4, 12, 3
	for round := range rounds {
		ns := fmt.Sprintf("race-%d", round)
		wantStatus(t, call(t, http.MethodPut, urlA+"/v1/namespaces/"+ns+"/quota", fmt.Sprintf(`{"resources":{"cpu":%d}}`, quota)), http.StatusOK)
		var wg sync.WaitGroup
		codes := make([]int, 2*writers)
		for i := range codes {
			url := []string{urlA, urlB}[i%2]
			body := strings.Replace(quotaProcJSON(fmt.Sprintf("p%d", i), 1, "1"), `"team-a"`, fmt.Sprintf("%q", ns), 1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = call(t, http.MethodPost, url+"/v1/namespaces/"+ns+"/processes", body).code
			}()
		}
		wg.Wait()
		created := 0
		for i, c := range codes {
			switch c {
			case http.StatusCreated:
				created++
			case http.StatusForbidden, http.StatusConflict:
			default:
				t.Errorf("%s: write %d: status %d", ns, i, c)
			}
		}
		var q quotaView
		r := call(t, http.MethodGet, urlB+"/v1/namespaces/"+ns+"/quota", "")
		wantStatus(t, r, http.StatusOK)
		if err := json.Unmarshal(r.body, &q); err != nil {
			t.Fatal(err)
		}
		if created > quota || q.ResourceUsage["cpu"] > quota {
			t.Fatalf("%s: %d writes of 1 cpu admitted, usage %v cpu, past the quota of %d", ns, created, q.ResourceUsage["cpu"], quota)
		}
		if created == 0 {
			t.Fatalf("%s: no write admitted", ns)
		}
	}
}

// Scales racing on two servers are judged as exactly as creates: four processes of one
// instance under a quota of six instances each ask one more, and only two get it.
func TestQuotaExactScalesAcrossServers(t *testing.T) {
	_, urlA := newTestServerOf(t, Config{})
	_, urlB := startTestServer(t, Config{}, testStore)
	const ns, procs = "race-scale", 4
	wantStatus(t, call(t, http.MethodPut, urlA+"/v1/namespaces/"+ns+"/quota", `{"resources":{"instances":6}}`), http.StatusOK)
	for i := range procs {
		body := strings.Replace(quotaProcJSON(fmt.Sprintf("p%d", i), 1, ""), `"team-a"`, fmt.Sprintf("%q", ns), 1)
		wantStatus(t, call(t, http.MethodPost, urlA+"/v1/namespaces/"+ns+"/processes", body), http.StatusCreated)
	}
	var wg sync.WaitGroup
	codes := make([]int, procs)
	for i := range codes {
		url := []string{urlA, urlB}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = call(t, http.MethodPost, fmt.Sprintf("%s/v1/namespaces/%s/processes/p%d/scale", url, ns, i), `{"instances":2}`).code
		}()
	}
	wg.Wait()
	var q quotaView
	r := call(t, http.MethodGet, urlB+"/v1/namespaces/"+ns+"/quota", "")
	wantStatus(t, r, http.StatusOK)
	if err := json.Unmarshal(r.body, &q); err != nil {
		t.Fatal(err)
	}
	if q.ResourceUsage["instances"] > 6 {
		t.Fatalf("scales answered %v: %v instances, past the quota of 6", codes, q.ResourceUsage["instances"])
	}
}

// A write whose namespace's resource quota was removed while another server moved its
// fence is judged again without a quota, and goes through on the next round: the fence
// it had seen no longer binds it.
func TestQuotaFenceQuotaRemoved(t *testing.T) {
	srv, url := newTestServerOf(t, Config{})
	const ns = "fence-unquota"
	wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/"+ns+"/quota", `{"resources":{"cpu":2}}`), http.StatusOK)
	ctx := context.Background()
	doc := fenceProc(t, ns, "mine", "1")
	a := srv.newAdmission(httptest.NewRequest(http.MethodPost, "/v1/apply", nil), opCreate, []v4.Document{doc})
	defer a.done()
	if err := admitQuota(ctx, a, targetOf(doc.Object)); err != nil {
		t.Fatal(err)
	}
	otherServerWrite(t, fenceProc(t, ns, "theirs", "1"))
	wantStatus(t, call(t, http.MethodPut, url+"/v1/namespaces/"+ns+"/quota", `{"resources":{}}`), http.StatusOK)
	rounds := 0
	err := a.fencedWrite(ctx, func(ctx context.Context) error {
		rounds++
		return srv.store.Create(ctx, doc.Object, store.Raw{})
	})
	if err != nil || rounds != 2 {
		t.Fatalf("%v after %d rounds, want stored in the second", err, rounds)
	}
}
