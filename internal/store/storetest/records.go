package storetest

import (
	"context"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/store"
)

// JoinToken stores a new join token of role in s (expires: zero for never) and returns
// it, secret included.
func JoinToken(t testing.TB, s *store.Store, role string, expires time.Time) jointoken.Token {
	t.Helper()
	tok, err := jointoken.New()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJoinToken(context.Background(), &store.JoinToken{ID: tok.ID, SecretHash: tok.SecretHash(), Role: role,
		Created: time.Now(), Expires: expires}); err != nil {
		t.Fatal(err)
	}
	return tok
}

// ProcessTaskGroup is a task group of one process, "web" of the Process "web", bound to
// node, as a controller would write it (not stored).
func ProcessTaskGroup(ns, name, node string) *v4.TaskGroup {
	return &v4.TaskGroup{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindTaskGroup},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns},
		Spec: v4.TaskGroupSpec{Owner: v4.OwnerRef{Kind: v4.KindProcess, Name: "web"}, Node: node,
			Template: v4.PodTemplate{Spec: v4.PodSpec{Processes: []v4.ProcessTask{{ProcName: "web", StartCmd: "./web"}}}}},
	}
}

// CreateNode stores a Ready node of capacity, as its agent registers it; changes edit it
// before v4.DefaultNode fills in what they left.
func CreateNode(t testing.TB, s *store.Store, name string, capacity v4.NodeResources, changes ...func(*v4.Node)) {
	t.Helper()
	n := &v4.Node{
		TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindNode},
		Metadata: v4.ObjectMeta{Name: name},
		Spec:     v4.NodeSpec{Capacity: capacity},
		Status:   v4.NodeStatus{Phase: v4.NodeReady},
	}
	for _, c := range changes {
		c(n)
	}
	v4.DefaultNode(n)
	if err := s.Create(context.Background(), n, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}
