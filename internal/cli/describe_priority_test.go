package cli

import "testing"

// describe shows a workload's priority, budget and the instances preempting, and
// get priorityclasses its table.
func TestDescribeAndGetPriorities(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/ns-a/processes/urgent", 200, `{"apiVersion":"v4","kind":"process",
		"metadata":{"name":"urgent","namespace":"ns-a","resourceVersion":"3","creationTimestamp":"2026-11-22T11:55:00Z"},
		"spec":{"instance":1,"priorityClassName":"high","priority":1000,"preemptionPolicy":"PreemptLowerPriority",
			"disruptionBudget":{"maxUnavailable":1},"template":{"spec":{"processes":[{"procName":"u","startCmd":"./u"}]}}},
		"status":{"phase":"Staging","instances":1,"running":0,
			"nominated":[{"index":0,"node":"node-1","victims":["ns-b/0.low.ns-b.berth.1"],"at":"2026-11-22T11:59:00Z"}]}}`)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	r := runCLIOK(t, url, "", "describe", "proc", "urgent", "-n", "ns-a")
	wantContains(t, r.stdout,
		"Priority:         1000 (high, PreemptLowerPriority)\n",
		"Disruption Budget: at most 1 unavailable\n",
		"Preempting:       instance 0 on node-1, waiting for 1 task groups to stop (since 11:59:00)\n",
	)

	api.json("GET /v1/priorityclasses", 200, `{"kind":"List","items":[
		{"kind":"priorityclass","metadata":{"name":"high"},"value":1000,"description":"user-facing"},
		{"kind":"priorityclass","metadata":{"name":"normal"},"value":0,"globalDefault":true,"preemptionPolicy":"Never"}]}`)
	r = runCLIOK(t, url, "", "get", "priorityclasses")
	wantContains(t, r.stdout,
		"NAME     VALUE   GLOBAL-DEFAULT   PREEMPTION-POLICY      DESCRIPTION\n",
		"high     1000    false            PreemptLowerPriority   user-facing\n",
		"normal   0       true             Never                  <none>\n",
	)
}

// describe shows a job's runs and a workflow's steps that are preempting, the steps by
// their node IDs.
func TestDescribeNominatedRunsAndSteps(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/events", 200, `{"kind":"EventList","items":[]}`)
	api.json("GET /v1/namespaces/ns-a/jobs/batch", 200, `{"apiVersion":"v4","kind":"job",
		"metadata":{"name":"batch","namespace":"ns-a","resourceVersion":"3","creationTimestamp":"2026-11-22T11:55:00Z"},
		"spec":{"priorityClassName":"high","priority":1000,"template":{"spec":{"processes":[{"procName":"u","startCmd":"./u"}]}}},
		"status":{"phase":"Running","nominated":[{"index":2,"node":"node-1","victims":["ns-b/0.low.ns-b.berth.1"],"at":"2026-11-22T11:59:00Z"}]}}`)
	r := runCLIOK(t, url, "", "describe", "job", "batch", "-n", "ns-a")
	wantContains(t, r.stdout,
		"Priority:         1000 (high, PreemptLowerPriority)\n",
		"Preempting:       run 2 on node-1, waiting for 1 task groups to stop (since 11:59:00)\n")

	api.json("GET /v1/namespaces/ns-a/workflows/wf", 200, `{"apiVersion":"v4","kind":"workflow",
		"metadata":{"name":"wf","namespace":"ns-a","resourceVersion":"3","creationTimestamp":"2026-11-22T11:55:00Z"},
		"spec":{"entrypoint":"main","templates":[{"name":"main","process":{"procName":"m","startCmd":"./m"}}]},
		"status":{"phase":"Running","nominated":[{"index":0,"step":"wf-123","node":"node-2","victims":["a","b"],"at":"2026-11-22T11:58:00Z"}]}}`)
	r = runCLIOK(t, url, "", "describe", "workflow", "wf", "-n", "ns-a")
	wantContains(t, r.stdout, "Preempting:       step wf-123 on node-2, waiting for 2 task groups to stop (since 11:58:00)\n")
}
