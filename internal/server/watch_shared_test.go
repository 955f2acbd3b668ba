package server

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// The streams that send one task group change (its node's agent, two watches of its
// namespace, a watch of every namespace) send the same bytes, one encoding of the change
// shared by all of them; a stream that sends the change otherwise (a DELETED to the agent
// of the node the task group left) sends a line of its own.
func TestTaskGroupStreamsSendOneLine(t *testing.T) {
	s, base := newTestServerOf(t, Config{})
	const ns, name = "tg-share", "0.web.tg-share.c.1"
	cacheHolds(t, s, putTaskGroup(t, ns, name, "n1", nil))
	agent := openStreamAs(t, "n1", base+"/v1/agent/nodes/n1/taskgroups?watch=true")
	users := []<-chan []byte{
		openStream(t, base+"/v1/namespaces/"+ns+"/taskgroups?watch=true"),
		openStream(t, base+"/v1/namespaces/"+ns+"/taskgroups?watch=true"),
		openStream(t, base+"/v1/taskgroups?watch=true"),
	}
	streams := append([]<-chan []byte{agent}, users...)
	for _, w := range streams {
		expectLines(t, w, [2]string{"ADDED", name})
	}

	putTaskGroup(t, ns, name, "n1", func(tg *v4.TaskGroup) { tg.Spec.Desired = v4.DesiredStopped })
	var want []byte
	for i, w := range streams {
		got := nextRaw(t, w)
		if want == nil {
			want = got
			var l line
			if err := json.Unmarshal(got, &l); err != nil || l.Type != "MODIFIED" || objectMeta(t, l.Object).Name != name {
				t.Fatalf("stream %d: %s (%v), want MODIFIED %s", i, got, err, name)
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("stream %d sent\n%s\nstream 0 sent\n%s", i, got, want)
		}
	}

	putTaskGroup(t, ns, name, "n2", nil) // it leaves n1: the agent of n1 is told DELETED
	var gone struct {
		Type   string       `json:"type"`
		Object v4.TaskGroup `json:"object"`
	}
	if err := json.Unmarshal(nextRaw(t, agent), &gone); err != nil || gone.Type != "DELETED" || gone.Object.Spec.Node != "n2" {
		t.Fatalf("the agent of n1: %+v (%v), want DELETED of the task group now on n2", gone, err)
	}
	for i, w := range users {
		if l := nextLine(t, w); l.Type != "MODIFIED" {
			t.Fatalf("user stream %d: %s, want MODIFIED", i, l.Type)
		}
	}
}

// nextRaw is the next line of a stream as it came, failing after 10 s.
func nextRaw(t *testing.T, ch <-chan []byte) []byte {
	t.Helper()
	select {
	case b, ok := <-ch:
		if !ok {
			t.Fatal("stream ended")
		}
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("no line within 10s")
	}
	return nil
}
