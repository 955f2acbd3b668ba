package server

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store/storetest"
)

// Every route that fans out over several namespaces answers only within the reader's
// rights: a tenant of one namespace lists and watches events and objects of its own, and
// is refused every namespace and any other one, whatever filter it adds.
func TestTenantFanOutsStayInItsNamespace(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, tenantNT, "tenant", "")
	for _, ns := range []string{"nt", "other"} {
		if err := testStore.RecordEvent(context.Background(), v4.Event{Type: v4.EventWarning, Reason: "InstanceFailed",
			Kind: v4.KindProcess, Namespace: ns, Name: "web", Message: "secret output of " + ns}); err != nil {
			t.Fatal(err)
		}
	}
	if err := testStore.RecordEvent(context.Background(), v4.Event{Type: v4.EventWarning, Reason: "NodeLost", Kind: v4.KindNode, Name: "n1"}); err != nil {
		t.Fatal(err)
	}
	storetest.FlushEvents(t, testStore)
	cases := []struct {
		path string
		want int
	}{
		{"/v1/events", http.StatusForbidden},
		{"/v1/events?kind=node", http.StatusForbidden},
		{"/v1/events?namespace=other", http.StatusForbidden},
		{"/v1/events?watch=true", http.StatusForbidden},
		{"/v1/events?namespace=other&watch=true", http.StatusForbidden},
		{"/v1/taskgroups", http.StatusForbidden},
		{"/v1/taskgroups?watch=true", http.StatusForbidden},
		{"/v1/notifies?watch=true", http.StatusForbidden},
		{"/v1/namespaces/other/taskgroups?watch=true", http.StatusForbidden},
		{"/v1/namespaces/other/notifies", http.StatusForbidden},
		{"/v1/nodes", http.StatusForbidden},
		{"/v1/events?namespace=nt", http.StatusOK},
		{"/v1/namespaces/nt/taskgroups", http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			r := callAs(t, "", http.MethodGet, url+tc.path, "", tenant)
			wantStatus(t, r, tc.want)
		})
	}
	r := callAs(t, "", http.MethodGet, url+"/v1/events?namespace=nt", "", tenant)
	var list v4.EventList
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	for _, e := range list.Items {
		if e.Namespace != "nt" {
			t.Errorf("the tenant's event list holds %+v", e)
		}
	}
	if len(list.Items) == 0 {
		t.Error("the tenant's own events are missing")
	}
}
