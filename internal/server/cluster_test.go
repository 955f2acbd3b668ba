package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/api/cluster"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/scheduler/feed"
	"github.com/berthhq/berth/internal/store/cache/cachetest"
	"github.com/berthhq/berth/internal/store/storetest"
)

func clusterOf(t *testing.T, url string) cluster.Info {
	t.Helper()
	r := call(t, http.MethodGet, url+"/v1/cluster", "")
	wantStatus(t, r, http.StatusOK)
	var v cluster.Info
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// GET /v1/cluster shows this server, its member's health and the controllers' leader;
// joins are refused without the token, with bad fields, and by a member on random ports.
func TestClusterViewAndJoinErrors(t *testing.T) {
	url := newTestServer(t, Config{ID: "server-1"})
	v := clusterOf(t, url)
	if v.Self.ID != "server-1" || v.Etcd != "embedded" || v.Leader != "" || len(v.Members) != 1 || !v.Members[0].Healthy || !v.Members[0].RaftLeader {
		t.Fatalf("cluster view %+v", v)
	}

	// With a manager campaigning, the view names it.
	caches := cachetest.Registry(t, testStore, controller.RegisterCaches)
	f := feed.New(caches, quietLogger())
	m := controller.NewManager(testStore, f, controller.Options{Logger: quietLogger(), Caches: caches}, "server-1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { f.Run(ctx); done <- struct{}{} }()
	go func() { m.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for clusterOf(t, url).Leader != "server-1" {
		if time.Now().After(deadline) {
			t.Fatal("the leader never shows")
		}
		time.Sleep(50 * time.Millisecond)
	}

	join := url + "/v1/cluster/members"
	server := storetest.JoinToken(t, testStore, v4.JoinRoleServer, time.Time{}).String()
	agentTok := storetest.JoinToken(t, testStore, v4.JoinRoleAgent, time.Time{}).String()
	expired := storetest.JoinToken(t, testStore, v4.JoinRoleServer, time.Now().Add(-time.Minute)).String()
	unknown := "berth-zzzzzz.0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		token, body string
		code        int
		want        string
	}{
		{"", `{"name":"b","peerURL":"https://127.0.0.1:21999"}`, 401, "join token"},
		{"wrong", `{"name":"b","peerURL":"https://127.0.0.1:21999"}`, 401, "join token"},
		{unknown, `{"name":"b","peerURL":"https://127.0.0.1:21999"}`, 401, "unknown or revoked join token"},
		{wrongLast(server), `{"name":"b","peerURL":"https://127.0.0.1:21999"}`, 401, "unknown or revoked join token"},
		{agentTok, `{"name":"b","peerURL":"https://127.0.0.1:21999"}`, 403, "needs a server token"},
		{expired, `{"name":"b","peerURL":"https://127.0.0.1:21999"}`, 403, "expired"},
		{server, `{"name":"b","peerURL":"https://127.0.0.1:21999","x":1}`, 400, "unknown field"},
		{server, `{"name":"-b","peerURL":"nope"}`, 422, "is invalid"},
		{server, `{"name":"b","peerURL":"https://127.0.0.1:21999"}`, 409, "random loopback ports"},
	} {
		r := callAs(t, "", http.MethodPost, join, tc.body, tc.token)
		wantStatus(t, r, tc.code)
		if e := decodeError(t, r); !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: message %q, want %q", tc.body, e.Message, tc.want)
		}
		if tc.code == 422 {
			if e := decodeError(t, r); len(e.Details) != 2 || e.Details[0].Field != "name" || e.Details[1].Field != "peerURL" {
				t.Errorf("details %+v, want name and peerURL", e.Details)
			}
		}
	}
	if len(clusterOf(t, url).Members) != 1 {
		t.Fatal("a refused join changed the members")
	}
}

// A server whose member has stable URLs adds a joining member as a learner and answers
// the initial cluster; the same join again gets the same answer; a clash is a 409.
func TestClusterJoin(t *testing.T) {
	st := storetest.Cluster(t, 1, 21600)[0]
	defer st.Close()
	_, url := startTestServer(t, Config{}, st)
	token := storetest.JoinToken(t, st, v4.JoinRoleServer, time.Time{}).String()

	self := clusterOf(t, url).Members[0]
	body := `{"name":"joiner","peerURL":"https://127.0.0.1:21798"}`
	want := "joiner=https://127.0.0.1:21798,m0=" + self.PeerURLs[0] // sorted
	for range 2 {
		r := callAs(t, "", http.MethodPost, url+"/v1/cluster/members", body, token)
		wantStatus(t, r, http.StatusCreated)
		var got cluster.Joined
		if err := json.Unmarshal(r.body, &got); err != nil || got.InitialCluster != want {
			t.Fatalf("answer %s (%v), want initial cluster %s", r.body, err, want)
		}
	}
	v := clusterOf(t, url)
	if len(v.Members) != 2 {
		t.Fatalf("members %+v", v.Members)
	}
	for _, m := range v.Members {
		if m.Name == "" && (!m.Learner || m.Started || m.Healthy) {
			t.Errorf("the added member: %+v, want a learner not yet started", m)
		}
	}
	r := callAs(t, "", http.MethodPost, url+"/v1/cluster/members", `{"name":"m0","peerURL":"https://127.0.0.1:21797"}`, token)
	wantStatus(t, r, http.StatusConflict)
	if e := decodeError(t, r); !strings.Contains(e.Message, `a member named "m0" already exists`) {
		t.Errorf("name clash: %s", e.Message)
	}
}
