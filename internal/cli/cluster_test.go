package cli

import (
	"strings"
	"testing"
)

const clusterView = `{"self":{"id":"s2@h:12","member":"s2"},"leader":"s1@h:11","etcd":"embedded","members":[
	{"id":"a1","name":"s1","peerURLs":["http://10.0.0.1:2380"],"clientURLs":["http://10.0.0.1:2379"],"started":true,"healthy":false,"error":"unreachable: context deadline exceeded"},
	{"id":"b2","name":"s2","peerURLs":["http://10.0.0.2:2380"],"clientURLs":["http://10.0.0.2:2379"],"started":true,"healthy":true,"raftLeader":true},
	{"id":"c3","name":"","peerURLs":["http://10.0.0.3:2380"],"clientURLs":[],"learner":true,"started":false,"healthy":false,"error":"not started"}]}`

func TestClusterCommand(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/cluster", 200, clusterView)
	r := runCLI(t, url, "", "cluster")
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := dedent(`
		Leader:  s1@h:11
		Server:  s2@h:12 at ` + url + `
		Etcd:    embedded

		MEMBER          ID   STATUS                                   RAFT      PEER URL               CLIENT URL
		s1              a1   unreachable: context deadline exceeded   <none>    http://10.0.0.1:2380   http://10.0.0.1:2379
		s2*             b2   healthy                                  leader    http://10.0.0.2:2380   http://10.0.0.2:2379
		(not started)   c3   not started                              learner   http://10.0.0.3:2380   <none>
		`)
	if r.stdout != want {
		t.Errorf("berth cluster =\n%s\nwant\n%s", r.stdout, want)
	}
	r = runCLI(t, url, "", "cluster", "-o", "json")
	if r.err != nil || !strings.Contains(r.stdout, `"leader": "s1@h:11"`) || !strings.Contains(r.stdout, `"raftLeader": true`) {
		t.Errorf("berth cluster -o json: %v\n%s", r.err, r.stdout)
	}
	// Without quorum the server still answers, with the reasons.
	api.json("GET /v1/cluster", 200, `{"self":{"id":"s2@h:12"},"leader":"","leaderError":"read the controllers' leader: context deadline exceeded","etcd":"embedded","members":[],"membersError":"no quorum"}`)
	r = runCLI(t, url, "", "cluster")
	if r.err != nil || !strings.Contains(r.stdout, "Leader:  unknown: read the controllers' leader") || !strings.Contains(r.stdout, "Members: unknown: no quorum") {
		t.Errorf("berth cluster without quorum: %v\n%s", r.err, r.stdout)
	}
}

// A server given several addresses asks the next when the first cannot be reached.
func TestClusterCommandFailsOver(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/cluster", 200, clusterView)
	r := runCLI(t, "http://127.0.0.1:1,"+url, "", "cluster", "-o", "json")
	if r.err != nil || !strings.Contains(r.stdout, `"s2@h:12"`) {
		t.Fatalf("failover: %v\n%s", r.err, r.stdout)
	}
}
