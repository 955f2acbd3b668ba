package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// agentCall is call as the agent of node n1.
func agentCall(t *testing.T, method, url, body string) response {
	t.Helper()
	return callAs(t, "n1", method, url, body, "")
}

// putTaskGroup stores a task group of a process bound to node, as a controller would.
func putTaskGroup(t *testing.T, ns, name, node string, edit func(*v4.TaskGroup)) *v4.TaskGroup {
	t.Helper()
	tg := storetest.ProcessTaskGroup(ns, name, node)
	if edit != nil {
		edit(tg)
	}
	tgs := store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup)
	ctx := context.Background()
	if _, err := tgs.Get(ctx, ns, name); err == nil {
		if err := tgs.Update(ctx, tg, store.Raw{}); err != nil {
			t.Fatal(err)
		}
		return tg
	}
	if err := tgs.Create(ctx, tg, store.Raw{}); err != nil {
		t.Fatal(err)
	}
	return tg
}

func getTaskGroup(t *testing.T, ns, name string) *v4.TaskGroup {
	t.Helper()
	tg, err := store.Typed[*v4.TaskGroup](testStore, v4.KindTaskGroup).Get(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

func statusJSON(t *testing.T, phase string, pids ...int) string {
	t.Helper()
	st := v4.TaskGroupStatus{Phase: phase, HostIP: "10.0.0.1"}
	for i, p := range pids {
		st.Tasks = append(st.Tasks, v4.TaskStatus{Name: "web" + string(rune('a'+i)), Status: phase, Info: v4.ContainerInfo{Pid: p}})
	}
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ndjson reads the lines of a watch stream.
type ndjson struct {
	t    *testing.T
	resp *http.Response
	sc   *bufio.Scanner
}

func openWatch(t *testing.T, url string) *ndjson {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := httpClientAs(t, "n1").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch: %d %s", resp.StatusCode, b)
	}
	return &ndjson{t: t, resp: resp, sc: bufio.NewScanner(resp.Body)}
}

// next returns the next event's type and task group name, failing after 10 s.
func (w *ndjson) next() (string, string) {
	w.t.Helper()
	type result struct {
		typ, name string
		ok        bool
	}
	ch := make(chan result, 1)
	go func() {
		if !w.sc.Scan() {
			ch <- result{}
			return
		}
		var ev struct {
			Type   string       `json:"type"`
			Object v4.TaskGroup `json:"object"`
		}
		if err := json.Unmarshal(w.sc.Bytes(), &ev); err != nil {
			ch <- result{}
			return
		}
		ch <- result{ev.Type, ev.Object.Metadata.Name, true}
	}()
	select {
	case r := <-ch:
		if !r.ok {
			w.t.Fatal("watch stream ended")
		}
		return r.typ, r.name
	case <-time.After(10 * time.Second):
		w.t.Fatal("no watch event in 10s")
	}
	return "", ""
}
