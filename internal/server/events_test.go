package server

import (
	"encoding/json"
	"net/http"
	"testing"

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
