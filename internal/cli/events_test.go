package cli

import (
	"strings"
	"testing"
)

const eventItems = `[
	{"time":"2026-11-22T11:58:00Z","type":"Normal","reason":"Created","kind":"process","namespace":"ns-a","name":"gamesvc","message":"process ns-a/gamesvc created"},
	{"time":"2026-11-22T11:59:30Z","type":"Normal","reason":"Updated","kind":"configmap","namespace":"ns-b","name":"cfg","message":"configmap ns-b/cfg updated"}]`

func TestEventsList(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":`+eventItems+`}`)
	tests := []struct {
		name    string
		args    []string
		query   string
		want    string
		wantErr string
	}{
		{name: "all namespaces", args: []string{"events", "-A"}, query: "", want: `
			NAMESPACE   LAST SEEN   TYPE     REASON    OBJECT            MESSAGE
			ns-a        2m          Normal   Created   process/gamesvc   process ns-a/gamesvc created
			ns-b        30s         Normal   Updated   configmap/cfg     configmap ns-b/cfg updated
			`},
		{name: "for one object", args: []string{"events", "-n", "ns-a", "--for", "proc/gamesvc", "-o", "name"},
			query: "?kind=process&name=gamesvc&namespace=ns-a", want: "\nprocess/gamesvc\nconfigmap/cfg\n"},
		{name: "bad --for", args: []string{"events", "--for", "gamesvc"}, wantErr: "want KIND/NAME"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api.reset()
			r := runCLI(t, url, "", tt.args...)
			if tt.wantErr != "" {
				if r.err == nil || !strings.Contains(r.err.Error(), tt.wantErr) {
					t.Fatalf("err = %v", r.err)
				}
				return
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if want := dedent(tt.want); r.stdout != want {
				t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
			}
			if got := api.got(); len(got) != 1 || got[0] != "GET /v1/events"+tt.query {
				t.Errorf("requests = %v", got)
			}
		})
	}
}

func TestEventsWatchSkipsListedEvents(t *testing.T) {
	api, url := newFakeAPI(t)
	created := `{"time":"2026-11-22T11:58:00Z","type":"Normal","reason":"Created","kind":"process","namespace":"ns-a","name":"gamesvc","message":"process ns-a/gamesvc created"}`
	failed := `{"time":"2026-11-22T12:00:00Z","type":"Warning","reason":"Failed","kind":"process","namespace":"ns-a","name":"gamesvc","message":"boom"}`
	// The watch opens before the list, so it may repeat a listed event: printed once.
	api.routes["GET /v1/events"] = func(w httpResponseWriter, r *httpRequest) {
		if r.URL.Query().Get("watch") == "true" {
			w.Write([]byte(created + "\n" + failed + "\n"))
			return
		}
		w.Write([]byte(`{"kind":"EventList","items":[` + created + `]}`))
	}
	r := runCLI(t, url, "", "events", "-w", "-n", "ns-a")
	if r.err == nil || !strings.Contains(r.err.Error(), "server closed the stream") {
		t.Errorf("err = %v", r.err)
	}
	want := dedent(`
		LAST SEEN   TYPE      REASON    OBJECT            MESSAGE
		2m          Normal    Created   process/gamesvc   process ns-a/gamesvc created
		0s          Warning   Failed    process/gamesvc   boom
		`)
	if r.stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
	}
}
