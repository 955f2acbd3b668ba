package cli

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

const nodeGPU3 = `{"apiVersion":"v4","kind":"node","metadata":{"name":"gpu-1"},
	"spec":{"hostname":"gpu-1","ip":"10.0.0.9","capacity":{"cpu":16,"memoryMB":65536,"diskMB":0},
	"allocatable":{"cpu":16,"memoryMB":65536,"diskMB":0,"extended":{"nvidia.com/gpu":3}},
	"gpus":[{"uuid":"GPU-a","index":0,"model":"A100","memoryMiB":40960,"numaNode":0},
		{"uuid":"GPU-b","index":1,"model":"A100","memoryMiB":40960,"numaNode":0},
		{"uuid":"GPU-c","index":2,"model":"A100","memoryMiB":40960,"numaNode":1}]},
	"status":{"phase":"Ready"}}`

// tgOn is a task group on gpu-1 in ns holding cpu, memory and the given cards (JSON).
func tgOn(ns, name, phase string, cpu, memMB int, gpus string) string {
	return `{"apiVersion":"v4","kind":"taskgroup","metadata":{"name":"` + name + `","namespace":"` + ns + `","creationTimestamp":"2026-11-22T11:00:00Z"},
		"spec":{"owner":{"kind":"application","name":"x"},"node":"gpu-1","template":{"spec":{}},
		"resources":{"cpu":` + strconv.Itoa(cpu) + `,"memoryMB":` + strconv.Itoa(memMB) + `,"diskMB":0},"gpus":[` + gpus + `]},"status":{"phase":"` + phase + `"}}`
}

func listJSON(items ...string) string {
	return `{"kind":"List","items":[` + strings.Join(items, ",") + `]}`
}

func TestDescribeNodeCardUse(t *testing.T) {
	train := tgOn("ml", "0.train.ml.berth.1", "Running", 4, 8192, `{"task":"trainer","uuid":"GPU-a","index":0,"cores":100,"memoryMiB":40960}`)
	inferA := tgOn("ml", "0.infer.ml.berth.1", "Running", 1, 2048, `{"task":"infer","uuid":"GPU-b","index":1,"cores":30,"memoryMiB":4096}`)
	inferB := tgOn("web", "1.infer.web.berth.1", "Starting", 1, 2048, `{"task":"infer","uuid":"GPU-b","index":1,"cores":30,"memoryMiB":4096}`)
	ended := tgOn("ml", "1.train.ml.berth.1", "Failed", 4, 8192, `{"task":"trainer","uuid":"GPU-c","index":2,"cores":100,"memoryMiB":40960}`)
	for _, c := range []struct {
		name   string
		routes map[string]func(w http.ResponseWriter, r *http.Request)
		want   []string
		unwant []string
		stderr string
	}{{
		name: "every namespace, over two pages; an ended task group holds nothing",
		routes: map[string]func(http.ResponseWriter, *http.Request){
			"GET /v1/taskgroups": func(w http.ResponseWriter, r *http.Request) {
				if q := r.URL.Query(); q.Get("node") != "gpu-1" || q.Get("limit") != "500" {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				if r.URL.Query().Get("continue") == "" {
					io.WriteString(w, `{"kind":"List","continue":"p2","items":[`+train+`,`+ended+`]}`)
					return
				}
				io.WriteString(w, listJSON(inferA, inferB))
			},
		},
		want: []string{
			"GPUs:\n  0  GPU-a  A100  40GiB, NUMA 0\n     whole card: ml/0.train.ml.berth.1 (trainer)\n",
			"  1  GPU-b  A100  40GiB, NUMA 0\n     60% of the cores, 8GiB of 40GiB: ml/0.infer.ml.berth.1 (infer 30%, 4GiB), web/1.infer.web.berth.1 (infer 30%, 4GiB)\n",
			"  2  GPU-c  A100  40GiB, NUMA 1\n     free\n",
			"Allocated:        cpu 6 of 16 (37%), memory 12GB of 64GB (18%), disk 0MB of 0MB, GPUs 2 of 3 in use (1 whole, 1 shared)\n",
			"Task Groups:\n  NAMESPACE   NAME                  PHASE      CPU   MEMORY   GPUS                   AGE\n" +
				"  ml          0.infer.ml.berth.1    Running    1     2GB      infer:gpu1(30%,4GiB)   60m\n" +
				"  ml          0.train.ml.berth.1    Running    4     8GB      trainer:gpu0           60m\n" +
				"  web         1.infer.web.berth.1   Starting   1     2GB      infer:gpu1(30%,4GiB)   60m\n",
		},
		unwant: []string{"1.train.ml"},
	}, {
		name: "a token limited to its namespace sees only that namespace's holders",
		routes: map[string]func(http.ResponseWriter, *http.Request){
			"GET /v1/taskgroups": func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, `{"error":{"code":403,"reason":"Forbidden","message":"forbidden"}}`)
			},
			"GET /v1/namespaces/web/taskgroups": func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Query().Get("node") != "gpu-1" {
					w.WriteHeader(http.StatusBadRequest)
					return
				}
				io.WriteString(w, listJSON(inferB))
			},
		},
		want: []string{
			"     30% of the cores, 4GiB of 40GiB: web/1.infer.web.berth.1 (infer 30%, 4GiB)\n",
			"  0  GPU-a  A100  40GiB, NUMA 0\n     held by no task group of namespace web\n",
			"(namespace web only: you may not list the others)\n",
		},
		unwant: []string{"ml/", "whole card"},
	}, {
		name:   "the task groups cannot be listed: the cards without their use, and a warning",
		routes: map[string]func(http.ResponseWriter, *http.Request){},
		want:   []string{"GPUs:\n  0  GPU-a  A100  40GiB, NUMA 0\n  1  GPU-b"},
		unwant: []string{"free", "Allocated:", "Task Groups"},
		stderr: "warning: cannot list the node's task groups",
	}} {
		t.Run(c.name, func(t *testing.T) {
			api, url := newFakeAPI(t)
			api.json("GET /v1/nodes/gpu-1", 200, nodeGPU3)
			api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
			api.mu.Lock()
			for route, h := range c.routes {
				api.routes[route] = h
			}
			api.mu.Unlock()
			r := runCLIOK(t, url, "", "describe", "node", "gpu-1", "-n", "web")
			wantContains(t, r.stdout, c.want...)
			for _, u := range c.unwant {
				if strings.Contains(r.stdout, u) {
					t.Errorf("has %q:\n%s", u, r.stdout)
				}
			}
			if c.stderr != "" && !strings.Contains(r.stderr, c.stderr) {
				t.Errorf("stderr = %q, want %q", r.stderr, c.stderr)
			}
		})
	}
}
