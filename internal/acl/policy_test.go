package acl

import (
	"strings"
	"testing"
)

// Namespace globs and a secret named by its kind.
func TestPolicyRules(t *testing.T) {
	p := &Policy{Kind: KindPolicy, Metadata: PolicyMeta{Name: "dev"}, Rules: []Rule{
		{Namespaces: []string{"dev-*"}, Kinds: []string{"*"}, Verbs: []string{"read", "write"}},
		{Namespaces: []string{"dev-a"}, Kinds: []string{"secret"}, Verbs: []string{"read"}},
		{Kinds: []string{"node"}, Verbs: []string{"read"}},
	}}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		req  Request
		want bool
	}{
		{Request{Verb: "write", Kind: "process", Namespace: "dev-b"}, true},
		{Request{Verb: "scale", Kind: "process", Namespace: "dev-b"}, true}, // write implies scale
		{Request{Verb: "exec", Kind: "taskgroup", Namespace: "dev-b"}, false},
		{Request{Verb: "write", Kind: "process", Namespace: "prod"}, false},
		{Request{Verb: "read", Kind: "process", Namespace: "*"}, false}, // every namespace needs "*"
		{Request{Verb: "read", Kind: "secret", Namespace: "dev-b"}, false},
		{Request{Verb: "read", Kind: "secret", Namespace: "dev-a"}, true},
		{Request{Verb: "read", Kind: "node"}, true},
		{Request{Verb: "write", Kind: "node"}, false},
	} {
		if got := p.Allows(c.req); got != c.want {
			t.Errorf("%s: %v, want %v", c.req, got, c.want)
		}
	}
	bad := &Policy{Kind: "policy", Metadata: PolicyMeta{Name: "Bad"}, Rules: []Rule{{Kinds: []string{"process"}, Verbs: []string{"fly"}, Namespaces: []string{"[x"}}}}
	err := bad.Validate()
	for _, field := range []string{"kind", "metadata.name", "rules[0].verbs[0]", "rules[0].namespaces[0]"} {
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("validation %v does not name %s", err, field)
		}
	}
	long := &Policy{Kind: KindPolicy, Metadata: PolicyMeta{Name: "long"}, Rules: []Rule{{Namespaces: []string{"*"}, Kinds: make([]string, 65), Verbs: []string{"read"}}}}
	for i := range long.Rules[0].Kinds {
		long.Rules[0].Kinds[i] = "process"
	}
	if err := long.Validate(); err == nil || !strings.Contains(err.Error(), "rules[0].kinds: at most 64 entries") {
		t.Errorf("a rule of 65 kinds: %v", err)
	}
}

// A refusal names the right in words: "may not read the logs of task group ...".
func TestRequestString(t *testing.T) {
	cases := []struct {
		req  Request
		want string
	}{
		{Request{Verb: VerbLogs, Kind: "taskgroup", Namespace: "dev"}, "read the logs of task group in namespace dev"},
		{Request{Verb: VerbExec, Kind: "taskgroup", Namespace: "dev"}, "run commands in task group in namespace dev"},
		{Request{Verb: VerbRead, Kind: "taskgroup", Namespace: "*"}, "read task group in every namespace"},
		{Request{Verb: VerbScale, Kind: "application", Namespace: "dev"}, "scale application in namespace dev"},
		{Request{Verb: VerbWrite, Kind: "process", Namespace: "dev", Privilege: "hostNetwork"}, `write process with the privilege "hostNetwork" in namespace dev`},
		{Request{Verb: VerbAdmin, Kind: KindCluster}, "administer the cluster"},
		{Request{Verb: VerbAdmin, Kind: KindEngine}, "administer the engine"},
		{Request{Verb: VerbWrite, Kind: "node"}, "write node"},
		{Request{Verb: VerbRead, Kind: "namespacequota", Namespace: "dev"}, "read namespace quota in namespace dev"},
	}
	for _, tc := range cases {
		if got := tc.req.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.req, got, tc.want)
		}
	}
}
