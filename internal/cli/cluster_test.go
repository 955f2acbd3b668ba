package cli

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const clusterView = `{"self":{"id":"s2@h:12","member":"s2"},"leader":"s1@h:11","etcd":"embedded","members":[
	{"id":"a1","name":"s1","peerURLs":["http://10.0.0.1:2380"],"clientURLs":["http://10.0.0.1:2379"],"started":true,"healthy":false,"error":"unreachable: context deadline exceeded"},
	{"id":"b2","name":"s2","peerURLs":["http://10.0.0.2:2380"],"clientURLs":["http://10.0.0.2:2379"],"started":true,"healthy":true,"raftLeader":true,
	 "dbSize":125829120,"dbSizeInUse":52428800,"dbQuota":8589934592},
	{"id":"c3","name":"","peerURLs":["http://10.0.0.3:2380"],"clientURLs":[],"learner":true,"started":false,"healthy":false,"error":"not started"}],
	"space":{"noSpace":false,"lastCompaction":{"revision":4711,"time":"2026-11-22T10:00:00Z"}}}`

func TestClusterCommand(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/cluster", 200, clusterView)
	r := runCLIOK(t, url, "", "cluster")
	want := dedent(`
		Leader:  s1@h:11
		Server:  s2@h:12 at ` + url + `
		Etcd:    embedded
		Space:   ok; history compacted to revision 4711 at ` + time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).Local().Format(time.DateTime) + `

		MEMBER          ID   STATUS                                   RAFT      DB SIZE    IN USE    QUOTA    PEER URL               CLIENT URL
		s1              a1   unreachable: context deadline exceeded   <none>    <none>     <none>    <none>   http://10.0.0.1:2380   http://10.0.0.1:2379
		s2*             b2   healthy                                  leader    120.0MiB   50.0MiB   8.0GiB   http://10.0.0.2:2380   http://10.0.0.2:2379
		(not started)   c3   not started                              learner   <none>     <none>    <none>   http://10.0.0.3:2380   <none>
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

// A full etcd: berth cluster shows the alarm and what to do.
func TestClusterCommandNoSpace(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/cluster", 200, `{"self":{"id":"s1@h:11"},"leader":"s1@h:11","etcd":"embedded","members":[
		{"id":"a1","name":"berth","peerURLs":[],"clientURLs":["http://127.0.0.1:2379"],"started":true,"healthy":false,"error":"memberID:161 alarm:NOSPACE",
		 "dbSize":8600000000,"dbSizeInUse":8500000000,"dbQuota":8589934592}],
		"space":{"noSpace":true,"alarms":[{"member":"a1","type":"NOSPACE"},{"member":"a1","type":"CORRUPT"}],"advice":"live data fills etcd: delete objects"}}`)
	r := runCLIOK(t, url, "", "cluster")
	wantContains(t, r.stdout,
		"Space:   FULL (NOSPACE alarm): etcd refuses writes\n         live data fills etcd: delete objects\n",
		"Alarms:  CORRUPT on member a1\n",
		"8.0GiB    7.9GiB   8.0GiB",
	)
}

func TestClusterRecoverCommand(t *testing.T) {
	const recovered = `{"compactedTo":812,"members":[
		{"name":"s1","endpoint":"http://10.0.0.1:2379","sizeBefore":34603008,"inUseBefore":34603008,"sizeAfter":1048576,"inUseAfter":1040384,"quota":33554432,"defragmented":true},
		{"name":"s2","endpoint":"http://10.0.0.2:2379","quota":33554432,"error":"unreachable: context deadline exceeded"}],
		"alarmBefore":true,"disarmed":%s,"liveData":false,"message":"%s"}`
	tests := []struct {
		name, disarmed, message string
		wantErr                 bool
	}{
		{"disarmed", "true", "etcd space recovered", false},
		{"alarm stays", "false", "the NOSPACE alarm stays raised", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, url := newFakeAPI(t)
			api.json("POST /v1/cluster/recover", 200, fmt.Sprintf(recovered, tt.disarmed, tt.message))
			r := runCLI(t, url, "", "cluster", "recover")
			if (r.err != nil) != tt.wantErr || (r.err != nil && r.err.Error() != tt.message) {
				t.Fatalf("err = %v, want error %v (%q)", r.err, tt.wantErr, tt.message)
			}
			want := dedent(`
				History compacted to revision 812.

				MEMBER   SIZE BEFORE   IN USE BEFORE   SIZE AFTER   IN USE AFTER   QUOTA     RESULT
				s1       33.0MiB       33.0MiB         1.0MiB       1016.0KiB      32.0MiB   defragmented
				s2       <none>        <none>          <none>       <none>         32.0MiB   unreachable: context deadline exceeded

				` + tt.message + `
				`)
			if r.stdout != want {
				t.Errorf("berth cluster recover =\n%s\nwant\n%s", r.stdout, want)
			}
			if got := api.got(); len(got) != 1 || got[0] != "POST /v1/cluster/recover" {
				t.Errorf("requests %v", got)
			}
		})
	}
}
