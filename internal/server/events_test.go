package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

func TestEventsRoute(t *testing.T) {
	base := newTestServer(t, Config{})
	ns := "events"
	coll := base + "/v1/namespaces/" + ns + "/configmaps"
	w := openStream(t, base+"/v1/events?namespace="+ns+"&watch=true")

	wantStatus(t, call(t, http.MethodPost, coll, cmJSON(ns, "cfg", "eA==")), http.StatusCreated)
	wantStatus(t, call(t, http.MethodPut, coll+"/cfg", cmJSON(ns, "cfg", "eQ==")), http.StatusOK)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/apply", cmJSON(ns, "applied", "eA==")), http.StatusOK)
	wantStatus(t, call(t, http.MethodPost, base+"/v1/apply", cmJSON(ns, "applied", "eA==")), http.StatusOK) // unchanged: no event
	wantStatus(t, call(t, http.MethodDelete, coll+"/cfg", ""), http.StatusOK)
	want := []struct{ reason, name string }{
		{"Created", "cfg"}, {"Updated", "cfg"}, {"Created", "applied"}, {"Deleted", "cfg"},
	}

	storetest.FlushEvents(t, testStore)
	r := call(t, http.MethodGet, base+"/v1/events?namespace="+ns+"&kind=cm", "")
	wantStatus(t, r, http.StatusOK)
	var list struct {
		Kind  string     `json:"kind"`
		Items []v4.Event `json:"items"`
	}
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "EventList" || len(list.Items) != len(want) {
		t.Fatalf("events %s", r.body)
	}
	for i, e := range list.Items {
		if e.Reason != want[i].reason || e.Name != want[i].name || e.Type != "Normal" || e.Kind != "configmap" || e.Time.IsZero() {
			t.Fatalf("event %d: %+v, want %+v", i, e, want[i])
		}
	}
	if e := list.Items[0]; e.Message != "configmap events/cfg created" {
		t.Errorf("message %q", e.Message)
	}

	storetest.FlushEvents(t, testStore)
	r = call(t, http.MethodGet, base+"/v1/events?namespace="+ns+"&name=applied", "")
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Items) != 1 {
		t.Fatalf("filter by name: %s", r.body)
	}

	for i, wnt := range want {
		b := <-w
		var e v4.Event
		if err := json.Unmarshal(b, &e); err != nil || e.Reason != wnt.reason || e.Name != wnt.name {
			t.Fatalf("streamed event %d: %s (%v), want %+v", i, b, err, wnt)
		}
	}
}

// A client lists the events and then watches from the list's revision: it gets what was
// recorded after the list and nothing the list held; a bad revision is a 400.
func TestEventsWatchFromAList(t *testing.T) {
	base := newTestServer(t, Config{})
	ns := "evfrom"
	coll := base + "/v1/namespaces/" + ns + "/configmaps"
	wantStatus(t, call(t, http.MethodPost, coll, cmJSON(ns, "before", "eA==")), http.StatusCreated)
	storetest.FlushEvents(t, testStore)
	r := call(t, http.MethodGet, base+"/v1/events?namespace="+ns+"&order=newest", "")
	wantStatus(t, r, http.StatusOK)
	var list v4.EventList
	if err := json.Unmarshal(r.body, &list); err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list: %s (%v)", r.body, err)
	}
	wantStatus(t, call(t, http.MethodPost, coll, cmJSON(ns, "after", "eA==")), http.StatusCreated)
	storetest.FlushEvents(t, testStore)
	w := openStream(t, base+"/v1/events?namespace="+ns+"&watch=true&resourceVersion="+list.ResourceVersion)
	var e v4.Event
	select {
	case b := <-w:
		if err := json.Unmarshal(b, &e); err != nil || e.Name != "after" || e.Reason != "Created" {
			t.Fatalf("first streamed event %s (%v), want the one recorded after the list", b, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event streamed within 10 s")
	}
	wantStatus(t, call(t, http.MethodGet, base+"/v1/events?watch=true&resourceVersion=-3", ""), http.StatusBadRequest)
}
