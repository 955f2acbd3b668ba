package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// openWhoami opens GET /v1/acl/whoami?watch=true as token and returns its lines, closed
// when the server ends the stream.
func openWhoami(t *testing.T, url, token string) <-chan v4.Whoami {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/v1/acl/whoami?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := httpClientAs(t, "").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch whoami: %d", resp.StatusCode)
	}
	out := make(chan v4.Whoami, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var w v4.Whoami
			if err := json.Unmarshal(sc.Bytes(), &w); err != nil {
				t.Errorf("bad line %q: %v", sc.Bytes(), err)
				return
			}
			out <- w
		}
	}()
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
		<-done
	})
	return out
}

func nextWhoami(t *testing.T, ch <-chan v4.Whoami) (v4.Whoami, bool) {
	t.Helper()
	select {
	case w, ok := <-ch:
		return w, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no whoami line within 10 s")
	}
	return v4.Whoami{}, false
}

// A console following a token's rights hears of a policy change as soon as etcd has it,
// and its next can-i answers with the new policy; a revoked token's stream ends.
func TestWhoamiWatchFollowsPolicyChanges(t *testing.T) {
	url := newTestServer(t, Config{})
	tok := tokenWithPolicy(t, url, teamA, "team-a", "")
	lines := openWhoami(t, url, tok)
	first, ok := nextWhoami(t, lines)
	if !ok || len(first.Policies) != 1 || first.Policies[0] != "team-a" || first.Token == "" {
		t.Fatalf("first line %+v (open %v), want the token with policy team-a", first, ok)
	}
	exec := `{"checks":[{"verb":"exec","kind":"taskgroup","namespace":"team-a"}]}`
	allowed := func() bool {
		r := callAs(t, "", http.MethodPost, url+"/v1/acl/can-i", exec, tok)
		wantStatus(t, r, http.StatusOK)
		var ans v4.CanIList
		if err := json.Unmarshal(r.body, &ans); err != nil {
			t.Fatal(err)
		}
		return ans.Checks[0].Allowed
	}
	if allowed() {
		t.Fatal("team-a may exec before its policy grants it")
	}
	wider := teamA[:len(teamA)-len("logs]\n")] + "logs, exec]\n"
	wantStatus(t, call(t, http.MethodPut, url+"/v1/acl/policies/team-a", wider), http.StatusOK)
	if _, ok := nextWhoami(t, lines); !ok {
		t.Fatal("the stream ended at a policy change")
	}
	if !allowed() {
		t.Error("after the change was announced, can-i still answers with the old policy")
	}
	wantStatus(t, call(t, http.MethodDelete, url+"/v1/acl/tokens/"+first.Token, ""), http.StatusNoContent)
	for {
		if _, ok := nextWhoami(t, lines); !ok {
			break // ended: the token no longer authenticates
		}
	}
}

// Only a token's rights can be watched, and the parameter is checked.
func TestWhoamiWatchRefusals(t *testing.T) {
	url := newTestServer(t, Config{})
	r := callWith(t, "", http.MethodGet, url+"/v1/acl/whoami?watch=true", "", "", http.Header{anonymousHeader: {"1"}})
	wantStatus(t, r, http.StatusUnauthorized)
	wantStatus(t, call(t, http.MethodGet, url+"/v1/acl/whoami?watch=perhaps", ""), http.StatusBadRequest)
}
