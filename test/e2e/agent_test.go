package e2e

import (
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// berth dev runs an agent in the process: its node registers, Ready, with the machine's
// cpu and memory, and heartbeats keep it so.
func TestDevRegistersItsNode(t *testing.T) {
	s := startDev(t, t.TempDir())
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	node := strings.ToLower(host)
	var out string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out = s.mustBerth("nodes")
		if strings.Contains(out, node) && strings.Contains(out, "Ready") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], node+" ") || !strings.Contains(lines[1], " Ready ") {
		t.Fatalf("berth nodes:\n%s", out)
	}
	var n struct {
		Spec struct {
			Capacity struct {
				CPU      float64 `json:"cpu"`
				MemoryMB float64 `json:"memoryMB"`
			} `json:"capacity"`
			Allocatable struct {
				CPU      float64 `json:"cpu"`
				MemoryMB float64 `json:"memoryMB"`
			} `json:"allocatable"`
		} `json:"spec"`
		Status struct {
			Phase         string    `json:"phase"`
			LastHeartbeat time.Time `json:"lastHeartbeat"`
			AgentAddress  string    `json:"agentAddress"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(s.mustBerth("get", "node", node, "-o", "json")), &n); err != nil {
		t.Fatal(err)
	}
	if n.Spec.Capacity.CPU != float64(runtime.NumCPU()) || n.Spec.Capacity.MemoryMB <= 0 ||
		n.Spec.Allocatable.CPU <= 0 || n.Spec.Allocatable.MemoryMB <= 0 || !strings.HasPrefix(n.Status.AgentAddress, "127.0.0.1:") {
		t.Fatalf("node: %+v", n)
	}
	// Heartbeats move lastHeartbeat forward.
	first := n.Status.LastHeartbeat
	deadline = time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if err := json.Unmarshal([]byte(s.mustBerth("get", "node", node, "-o", "json")), &n); err != nil {
			t.Fatal(err)
		}
		if n.Status.LastHeartbeat.After(first) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !n.Status.LastHeartbeat.After(first) {
		t.Fatalf("no heartbeat after %v", first)
	}
	s.stop() // the output is complete (and safe to read) once the process exited
	if !strings.Contains(s.logs.String(), "node:     "+node) {
		t.Errorf("the banner does not name the node:\n%s", s.logs.String())
	}
	if !strings.Contains(s.logs.String(), "berth agent stopped") {
		t.Errorf("the agent did not stop cleanly:\n%s", s.logs.String())
	}
}
