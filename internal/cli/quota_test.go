package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

const quotaAnswer = `{"namespace":"team-a","limits":{"objects":10000,"bytes":1073741824,"resources":{"cpu":8,"gpu":2},` +
	`"limitDefaults":{"defaultRequests":{"cpu":0.25},"max":{"cpu":4}}},"default":false,"usage":{"objects":3,"bytes":2048},` +
	`"resourceUsage":{"cpu":7.5,"memory":512,"disk":0,"gpu":1,"vcuda-core":0,"vcuda-memory":0,"instances":5}}`

// describe namespace and quota get print the quotas with their usage and the limit
// defaults; quota set changes what it is given, keeps the rest, and sends force.
func TestQuotaCommands(t *testing.T) {
	api, url := newFakeAPI(t)
	const path = "/v1/namespaces/team-a/quota"
	api.json("GET "+path, 200, quotaAnswer)
	api.json("PUT "+path, 200, quotaAnswer)
	for _, args := range [][]string{{"describe", "namespace", "team-a"}, {"quota", "get", "-n", "team-a"}} {
		r := runCLIOK(t, url, "", args...)
		for _, want := range []string{"Namespace:  team-a", "3 of 10000 objects", "cpu", "7.5", "gpu", "DEFAULT REQUEST", "0.25", "memory         512MB   -"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v: no %q in\n%s", args, want, r.stdout)
			}
		}
	}
	runCLIOK(t, url, "", "quota", "set", "team-a", "cpu=10", "gpu=none", "instances=20", "--max", "memory=2048", "--force")
	var sent struct {
		Objects       int64              `json:"objects"`
		Resources     map[string]float64 `json:"resources"`
		LimitDefaults struct {
			Requests map[string]float64 `json:"defaultRequests"`
			Max      map[string]float64 `json:"max"`
		} `json:"limitDefaults"`
	}
	if err := json.Unmarshal([]byte(api.body("PUT "+path)), &sent); err != nil {
		t.Fatal(err)
	}
	if sent.Resources["cpu"] != 10 || sent.Resources["instances"] != 20 || len(sent.Resources) != 2 || sent.Objects != 10000 ||
		sent.LimitDefaults.Requests["cpu"] != 0.25 || sent.LimitDefaults.Max["memory"] != 2048 || sent.LimitDefaults.Max["cpu"] != 4 {
		t.Errorf("sent %s", api.body("PUT "+path))
	}
	if got := api.got(); !strings.Contains(strings.Join(got, " "), "PUT "+path+"?force=true") {
		t.Errorf("requests %v: no force", got)
	}
	if r := runCLI(t, url, "", "quota", "set", "team-a", "cpu"); r.err == nil || !strings.Contains(r.err.Error(), "RESOURCE=AMOUNT") {
		t.Errorf("bad argument: %v", r.err)
	}
}
