package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
	"github.com/berthhq/berth/internal/store/storetest/etcdfill"
)

// newSpaceServer serves a Server over an embedded etcd of its own with a small quota:
// the package's shared etcd must not fill up.
func newSpaceServer(t *testing.T) (string, *store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir(), Logger: quietLogger(), QuotaBytes: etcdfill.Quota, Keyring: storetest.Keyring()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() }) // after the server's cleanup, which runs first
	_, url := startTestServer(t, Config{}, st)
	return url, st
}

// waitFor polls cond every 200 ms for up to 25 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(25 * time.Second); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 25 s", what)
		}
	}
}

// Live data fills etcd: writes answer 507 saying so, /readyz 503, GET /v1/cluster shows
// the alarm; once the operator deleted data, recover brings writes back without a restart.
func TestNoSpaceLiveData(t *testing.T) {
	base, st := newSpaceServer(t)
	etcdfill.Fill(t, st.Client(), false)
	create := func(name string) response {
		return call(t, http.MethodPost, base+"/v1/namespaces/ns-space/configmaps", cmJSON("ns-space", name, "eA=="))
	}
	r := create("refused")
	wantStatus(t, r, http.StatusInsufficientStorage)
	if msg := decodeError(t, r).Message; !strings.Contains(msg, "NOSPACE") || !strings.Contains(msg, "berth cluster recover") {
		t.Fatalf("507 message %q: want what happened and how to recover", msg)
	}
	// /readyz reads the alarm through a 2 s cache (store.alarmCacheTTL).
	waitFor(t, "/readyz 503", func() bool {
		r = call(t, http.MethodGet, base+"/readyz", "")
		return r.code == http.StatusServiceUnavailable
	})
	if msg := decodeError(t, r).Message; !strings.Contains(msg, "NOSPACE") {
		t.Fatalf("/readyz message %q: want the NOSPACE reason", msg)
	}
	v := clusterOf(t, base)
	if !v.Space.NoSpace || len(v.Space.Alarms) != 1 || v.Space.Alarms[0].Type != "NOSPACE" || v.Space.Advice == "" {
		t.Fatalf("GET /v1/cluster space %+v: want the NOSPACE alarm and advice", v.Space)
	}
	// etcd refuses a put that would take the file past the quota: it is full to within
	// about one value.
	if len(v.Members) != 1 || v.Members[0].DBQuota != etcdfill.Quota || v.Members[0].DBSize < etcdfill.Quota-2*etcdfill.ValueSize ||
		!strings.Contains(v.Members[0].Error, "NOSPACE alarm") {
		t.Fatalf("members %+v: want one full member with its quota and the alarm", v.Members)
	}
	// The server's own attempt finds live data, and every 507 then says so.
	waitFor(t, "told live data fills etcd", func() bool {
		r := create("refused")
		return r.code == http.StatusInsufficientStorage && strings.Contains(decodeError(t, r).Message, "live data fills etcd")
	})
	if _, err := st.Client().Delete(context.Background(), etcdfill.Prefix, clientv3.WithPrefix()); err != nil {
		t.Fatalf("deletes must work on a full etcd: %v", err)
	}
	r = call(t, http.MethodPost, base+"/v1/cluster/recover", "")
	wantStatus(t, r, http.StatusOK)
	var rec cluster.Recovery
	if err := json.Unmarshal(r.body, &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Disarmed || rec.CompactedTo == 0 || len(rec.Members) != 1 || !rec.Members[0].Defragmented ||
		rec.Members[0].SizeAfter >= rec.Members[0].SizeBefore {
		t.Fatalf("recovery %s: want a compaction, a smaller defragmented member and the alarm disarmed", r.body)
	}
	wantStatus(t, create("accepted"), http.StatusCreated)
	wantStatus(t, call(t, http.MethodGet, base+"/readyz", ""), http.StatusOK)
	if v := clusterOf(t, base); v.Space.NoSpace || len(v.Space.Alarms) != 0 {
		t.Fatalf("space after the recovery %+v", v.Space)
	}
}

// History fills etcd (one key rewritten): the server compacts, defragments and disarms
// by itself, and records a warning.
func TestNoSpaceRecoversByItself(t *testing.T) {
	base, st := newSpaceServer(t)
	// etcd refused a put with NOSPACE (etcdfill.Fill fails otherwise). The server may be
	// recovering already, so the alarm is not asked for here: the recovery's event is.
	etcdfill.Fill(t, st.Client(), true)
	waitFor(t, "writing again", func() bool {
		r := call(t, http.MethodPost, base+"/v1/namespaces/ns-space/configmaps", cmJSON("ns-space", "after", "eA=="))
		if r.code != http.StatusCreated && r.code != http.StatusInsufficientStorage {
			t.Fatalf("write while etcd is full: %d %s, want 507", r.code, r.body)
		}
		return r.code == http.StatusCreated
	})
	wantStatus(t, call(t, http.MethodGet, base+"/readyz", ""), http.StatusOK)
	r := call(t, http.MethodGet, base+"/v1/events?name=etcd", "")
	wantStatus(t, r, http.StatusOK)
	if !strings.Contains(string(r.body), `"EtcdSpaceRecovered"`) {
		t.Fatalf("events: %s, want an EtcdSpaceRecovered warning", r.body)
	}
	v := clusterOf(t, base)
	if v.Members[0].DBSize >= etcdfill.Quota/2 {
		t.Fatalf("member %+v: the file did not shrink", v.Members[0])
	}
}

// Turning maintenance off is a write, which a full etcd refuses: recovery must get
// through engine maintenance.
func TestRecoverInMaintenance(t *testing.T) {
	base, _ := newSpaceServer(t)
	wantStatus(t, call(t, http.MethodPut, base+"/v1/engine", `{"maintenance": true, "reason": "test"}`), http.StatusOK)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/namespaces/ns-space/configmaps", cmJSON("ns-space", "locked", "eA==")), http.StatusLocked)
	r := call(t, http.MethodPost, base+"/v1/cluster/recover", "")
	wantStatus(t, r, http.StatusOK)
	var rec cluster.Recovery
	if err := json.Unmarshal(r.body, &rec); err != nil || rec.AlarmBefore || rec.Disarmed || len(rec.Members) != 1 || rec.Message == "" {
		t.Fatalf("recovery without an alarm: %s (%v)", r.body, err)
	}
}
