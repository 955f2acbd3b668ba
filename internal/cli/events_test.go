package cli

import (
	"fmt"
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
		{name: "all namespaces", args: []string{"events", "-A"}, query: "?limit=1000", want: `
			NAMESPACE   LAST SEEN   TYPE     REASON    OBJECT            COUNT   MESSAGE
			ns-a        2m          Normal   Created   process/gamesvc   1       process ns-a/gamesvc created
			ns-b        30s         Normal   Updated   configmap/cfg     1       configmap ns-b/cfg updated
			`},
		{name: "for one object", args: []string{"events", "-n", "ns-a", "--for", "proc/gamesvc", "-o", "name"},
			query: "?kind=process&limit=1000&name=gamesvc&namespace=ns-a", want: "\nprocess/gamesvc\nconfigmap/cfg\n"},
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
		LAST SEEN   TYPE      REASON    OBJECT            COUNT   MESSAGE
		2m          Normal    Created   process/gamesvc   1       process ns-a/gamesvc created
		0s          Warning   Failed    process/gamesvc   1       boom
		`)
	if r.stdout != want {
		t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
	}
}

func TestEventsPagesLimitAndCounts(t *testing.T) {
	api, url := newFakeAPI(t)
	ev := func(sec int, reason string, count int) string {
		return fmt.Sprintf(`{"time":"2026-11-22T11:59:%02dZ","type":"Normal","reason":%q,"kind":"process","namespace":"ns-a","name":"web",`+
			`"message":"m","count":%d,"firstTime":"2026-11-22T11:50:00Z","lastTime":"2026-11-22T11:59:%02dZ"}`, sec, reason, count, sec)
	}
	pages := map[string]string{
		"":   `{"kind":"EventList","resourceVersion":"9","continue":"c1","items":[` + ev(0, "A", 1) + `,` + ev(10, "B", 1) + `]}`,
		"c1": `{"kind":"EventList","resourceVersion":"9","continue":"c2","items":[` + ev(20, "C", 1) + `,` + ev(30, "D", 1) + `]}`,
		"c2": `{"kind":"EventList","resourceVersion":"9","items":[` + ev(40, "E", 12) + `]}`,
	}
	api.routes["GET /v1/events"] = func(w httpResponseWriter, r *httpRequest) {
		w.Write([]byte(pages[r.URL.Query().Get("continue")]))
	}
	tests := []struct {
		name       string
		args       []string
		wantOut    string
		wantErrOut string
	}{
		{"the most recent", []string{"--limit", "2"}, `
			LAST SEEN   TYPE     REASON   OBJECT        COUNT   MESSAGE
			30s         Normal   D        process/web   1       m
			20s         Normal   E        process/web   12      m
			`, "Showing the 2 most recent of 5 events (--limit 0 shows all).\n"},
		{"all", []string{"--limit", "0", "-o", "name"}, "\nprocess/web\nprocess/web\nprocess/web\nprocess/web\nprocess/web\n", ""},
		{"fewer than the limit", []string{"-o", "name"}, "\nprocess/web\nprocess/web\nprocess/web\nprocess/web\nprocess/web\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api.reset()
			r := runCLIOK(t, url, "", append([]string{"events", "-n", "ns-a"}, tt.args...)...)
			if want := dedent(tt.wantOut); r.stdout != want {
				t.Errorf("stdout =\n%s\nwant\n%s", r.stdout, want)
			}
			if r.stderr != tt.wantErrOut {
				t.Errorf("stderr = %q, want %q", r.stderr, tt.wantErrOut)
			}
			want := []string{"GET /v1/events?limit=1000&namespace=ns-a", "GET /v1/events?continue=c1&limit=1000&namespace=ns-a",
				"GET /v1/events?continue=c2&limit=1000&namespace=ns-a"}
			if got := api.got(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("requests = %v, want every page %v", got, want)
			}
		})
	}
	if r := runCLI(t, url, "", "events", "--limit", "-1"); r.err == nil || !strings.Contains(r.err.Error(), "--limit") {
		t.Errorf("--limit -1: err = %v", r.err)
	}
}
