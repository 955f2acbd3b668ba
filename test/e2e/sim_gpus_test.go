package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// A process with a task on two whole cards and a task with a 30% share of one.
const gpuApp = `{"apiVersion":"v4","kind":"process","metadata":{"name":"train","namespace":"ml"},
	"restartPolicy":{"policy":"Never"},
	"spec":{"instance":1,"template":{"spec":{"processes":[
		{"procName":"trainer","startCmd":"./train","resources":{"requests":{"cpu":"1","memory":"512"},
			"extendedResources":[{"name":"nvidia.com/gpu","value":2}]}},
		{"procName":"infer","startCmd":"./infer","resources":{"requests":{"cpu":"0.5","memory":"256"},
			"extendedResources":[{"name":"tencent.com/vcuda-core","value":30},{"name":"tencent.com/vcuda-memory","value":16}]}}]}}}}`

// TestSimGPUPlayground: `berth sim --gpus` nodes register cards; `berth plan` places a
// workload asking for whole cards and a share on them, `berth apply` runs it there, and
// `berth describe` shows the cards on the task group and who holds each card of the node.
func TestSimGPUPlayground(t *testing.T) {
	dataDir := t.TempDir()
	s := startDev(t, dataDir, "--agent=false")
	s.startSim(t, dataDir, "--nodes", "2", "--prefix", "gpu", "--gpus", "4:A100-40GB")
	waitUntil(t, 60*time.Second, "2 simulated nodes Ready with 4 cards", func() bool {
		var list struct{ Items []v4.Node }
		r := s.berth("", "get", "nodes", "-o", "json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list.Items) != 2 {
			return false
		}
		for _, n := range list.Items {
			if n.Status.Phase != v4.NodeReady || len(n.Spec.GPUs) != 4 {
				return false
			}
		}
		return true
	})

	spec := writeFiles(t, map[string]string{"train.json": gpuApp})
	r := s.berth("", "plan", "-f", spec)
	t.Logf("berth plan:\n%s", r.stdout)
	if r.code != 0 || !strings.Contains(r.stdout, "GPUS") || !strings.Contains(r.stdout, "infer:gpu") ||
		!strings.Contains(r.stdout, "(30%,4GiB)") || strings.Count(r.stdout, "trainer:gpu") != 2 {
		t.Fatalf("berth plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.mustBerth("apply", "-f", spec)
	var tg v4.TaskGroup
	waitUntil(t, 60*time.Second, "the instance Running on its cards", func() bool {
		var list struct{ Items []v4.TaskGroup }
		r := s.berth("", "get", "tg", "-n", "ml", "-o", "json")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list.Items) != 1 {
			return false
		}
		tg = list.Items[0]
		return tg.Status.Phase == v4.StatusRunning
	})
	if len(tg.Spec.GPUs) != 3 || !strings.HasPrefix(tg.Spec.GPUs[0].UUID, "GPU-"+tg.Spec.Node+"-") {
		t.Fatalf("cards of the task group on %s: %+v", tg.Spec.Node, tg.Spec.GPUs)
	}
	out := s.mustBerth("describe", "tg", "ml/"+tg.Metadata.Name)
	t.Logf("berth describe tg:\n%s", out)
	if !strings.Contains(out, "Owner:            process/train (instance 0)") ||
		strings.Count(out, "whole card") != 2 || !strings.Contains(out, "30% of the cores, 4GiB") {
		t.Fatalf("describe tg:\n%s", out)
	}
	out = s.mustBerth("describe", "node", tg.Spec.Node)
	t.Logf("berth describe node:\n%s", out)
	if strings.Count(out, "whole card: ml/"+tg.Metadata.Name+" (trainer)") != 2 ||
		!strings.Contains(out, "30% of the cores, 4GiB of 40GiB: ml/"+tg.Metadata.Name+" (infer 30%, 4GiB)") ||
		strings.Count(out, "     free") != 1 || !strings.Contains(out, "GPUs 3 of 4 in use (2 whole, 1 shared)") {
		t.Fatalf("describe node:\n%s", out)
	}
	describeNodeAsTenant(t, s, tg.Spec.Node, tg.Metadata.Name)
}

// describeNodeAsTenant: a token limited to namespace web (and reading nodes) may not list
// every namespace's task groups; describe node shows it its own namespace's holders and
// says so, and nothing of namespace ml, whose instance holds three of the node's cards.
func describeNodeAsTenant(t *testing.T, s *devServer, node, mlTG string) {
	policy := filepath.Join(writeFiles(t, map[string]string{"web.yaml": "kind: acl-policy\nmetadata: {name: web}\nrules:\n" +
		"  - {namespaces: [web], kinds: [\"*\"], verbs: [read, write]}\n  - {namespaces: [\"*\"], kinds: [node], verbs: [read]}\n"}), "web.yaml")
	s.mustBerth("acl", "policy", "apply", "-f", policy)
	team := s.via(t, s.url)
	team.useToken(strings.TrimSpace(s.mustBerth("acl", "token", "create", "--policy", "web", "--name", "web", "-o", "name")))
	if r := team.berth("", "get", "tg", "-A"); r.code == 0 {
		t.Fatalf("the web token lists every namespace's task groups:\n%s", r.stdout)
	}
	r := team.berth("", "describe", "node", node, "-n", "web")
	t.Logf("berth describe node, as namespace web:\n%s%s", r.stdout, r.stderr)
	if r.code != 0 || strings.Contains(r.stdout, "ml/") || strings.Contains(r.stdout, mlTG) ||
		!strings.Contains(r.stdout, "(namespace web only: you may not list the others)") ||
		strings.Count(r.stdout, "held by no task group of namespace web") != 4 {
		t.Fatalf("describe node as namespace web: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
