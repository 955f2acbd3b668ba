package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// containerApp is an application of one container with the given docker parameters.
func containerApp(ns string, params ...[2]string) string {
	type param struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	ps := []param{}
	for _, p := range params {
		ps = append(ps, param{p[0], p[1]})
	}
	b, _ := json.Marshal(ps)
	return `{"apiVersion":"v4","kind":"application","metadata":{"name":"app","namespace":"` + ns + `"},"spec":{"instance":1,"template":{"spec":{"networkMode":"NONE","containers":[{"image":"busybox","parameters":` + string(b) + `}]}}}}`
}

// Docker parameters are an allow-list: a token that may write in its namespace, with no
// privilege, is refused (403 naming the field and the privilege) each parameter that
// reaches beyond the container, and writes the harmless ones.
func TestDockerParameterPrivileges(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: tenant}
rules:
  - {namespaces: ["pp"], kinds: ["*"], verbs: [read, write]}
`, "tenant", "")
	const field = "spec.template.spec.containers[0].parameters[0]"
	for _, c := range []struct{ key, value, priv string }{
		{"security-opt", "apparmor=lxc-container-default-with-nesting", "security-profile"},
		{"security-opt", "label=type:spc_t", "security-profile"},
		{"security-opt", "seccomp=unconfined", "unconfined"},
		{"cgroup-parent", "/berth/other", "cgroup-parent"},
		{"log-driver", "syslog", "log-driver"},
		{"log-opt", "syslog-address=tcp://203.0.113.7:514", "log-driver"},
		{"oom-score-adj", "-1000", "oom-score-adj"},
		{"oom-kill-disable", "true", "oom-score-adj"},
		{"ulimit", "memlock=-1", "ulimit"},
		{"ulimit", "nofile=4194304", "ulimit"},
		{"ulimit", "rtprio=99", "ulimit"},
		{"pids-limit", "-1", "ulimit"},
		{"ip", "10.0.0.9", "docker-parameter"},
		{"mac-address", "02:42:ac:11:00:02", "docker-parameter"},
		{"net", "container:berth-victim", "host-network"},
		{"ipc", "host", "host-ipc"},
	} {
		r := callAs(t, "", http.MethodPost, url+"/v1/apply", containerApp("pp", [2]string{c.key, c.value}), tenant)
		if r.code != http.StatusForbidden {
			t.Errorf("%s=%s: %d %s, want 403", c.key, c.value, r.code, r.body)
			continue
		}
		e := decodeError(t, r)
		if len(e.Details) != 1 || e.Details[0].Field != field || e.Details[0].Message != "needs the privilege "+c.priv ||
			!strings.Contains(e.Message, field+": ") || !strings.Contains(e.Message, `privilege "`+c.priv+`"`) {
			t.Errorf("%s=%s: %+v, want %s and %q", c.key, c.value, e, field, c.priv)
		}
	}

	harmless := containerApp("pp", [2]string{"memory-reservation", "64"}, [2]string{"memory-swap", "128"},
		[2]string{"shm-size", "64"}, [2]string{"pids-limit", "256"}, [2]string{"cpuset-cpus", "0"},
		[2]string{"dns", "10.0.0.2"}, [2]string{"add-host", "db:10.0.0.5"}, [2]string{"label", "team=web"},
		[2]string{"user", "1000"}, [2]string{"cap-drop", "ALL"}, [2]string{"init", "true"}, [2]string{"read-only", "true"},
		[2]string{"ulimit", "nofile=65536:65536"}, [2]string{"oom-score-adj", "100"},
		[2]string{"security-opt", "no-new-privileges"}, [2]string{"security-opt", "seccomp=builtin"},
		[2]string{"security-opt", "apparmor=docker-default"}, [2]string{"security-opt", "seccomp=strict"})
	if r := callAs(t, "", http.MethodPost, url+"/v1/apply", harmless, tenant); r.code != http.StatusOK {
		t.Fatalf("harmless parameters: %d %s", r.code, r.body)
	}
	// The management token has every privilege.
	wantStatus(t, call(t, http.MethodPost, url+"/v1/apply", containerApp("pp", [2]string{"cgroup-parent", "/x"})), http.StatusOK)
}

// One 403 lists every privilege a document lacks, each with its field, on apply and on
// the object routes alike; granting them all admits the document.
func TestEveryMissingPrivilegeAtOnce(t *testing.T) {
	url := newTestServer(t, Config{})
	tenant := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: tenant}
rules:
  - {namespaces: ["pa"], kinds: ["*"], verbs: [read, write]}
`, "tenant", "")
	doc := containerApp("pa", [2]string{"label", "a=b"}, [2]string{"cgroup-parent", "/x"}, [2]string{"log-driver", "gelf"},
		[2]string{"ulimit", "memlock=-1"}, [2]string{"oom-score-adj", "-500"}, [2]string{"security-opt", "apparmor=other"})
	const f = "spec.template.spec.containers[0].parameters"
	wantFields := []string{f + "[1]", f + "[2]", f + "[3]", f + "[4]", f + "[5]"}
	wantPrivs := []string{"cgroup-parent", "log-driver", "ulimit", "oom-score-adj", "security-profile"}
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/v1/apply"},
		{http.MethodPost, "/v1/namespaces/pa/applications"},
	} {
		r := callAs(t, "", c.method, url+c.path, doc, tenant)
		wantStatus(t, r, http.StatusForbidden)
		e := decodeError(t, r)
		var fields []string
		for i, d := range e.Details {
			fields = append(fields, d.Field)
			if i < len(wantPrivs) && d.Message != "needs the privilege "+wantPrivs[i] {
				t.Errorf("%s %s: detail %d %q, want %q", c.method, c.path, i, d.Message, wantPrivs[i])
			}
		}
		if !slices.Equal(fields, wantFields) {
			t.Errorf("%s %s: fields %v, want %v", c.method, c.path, fields, wantFields)
		}
		for _, p := range wantPrivs {
			if !strings.Contains(e.Message, `privilege "`+p+`"`) || !strings.Contains(e.Message, p) {
				t.Errorf("%s %s: message %q does not name %s", c.method, c.path, e.Message, p)
			}
		}
		if !strings.Contains(e.Message, "privileges: [cgroup-parent, log-driver, ulimit, oom-score-adj, security-profile]") {
			t.Errorf("%s %s: message %q", c.method, c.path, e.Message)
		}
	}
	granted := tokenWithPolicy(t, url, `kind: acl-policy
metadata: {name: granted}
rules:
  - {namespaces: ["pa"], kinds: [application], verbs: [write], privileges: [cgroup-parent, log-driver, ulimit, oom-score-adj, security-profile]}
`, "granted", "")
	wantStatus(t, callAs(t, "", http.MethodPost, url+"/v1/apply", doc, granted), http.StatusOK)
}

// A parameter berth does not know is refused before any privilege is weighed (422 naming
// its key), and so is a seccomp profile given inline or as a path: a node's profiles are
// named, never sent.
func TestUnknownDockerParameterInvalid(t *testing.T) {
	url := newTestServer(t, Config{})
	for _, c := range []struct{ key, value, field string }{
		{"volume", "/:/host", "spec.template.spec.containers[0].parameters[0].key"},
		{"--cgroup-parent", "/x", "spec.template.spec.containers[0].parameters[0].key"},
		{"security-opt", `seccomp={"defaultAction":"SCMP_ACT_ALLOW"}`, "spec.template.spec.containers[0].parameters[0].value"},
		{"security-opt", "seccomp=/etc/permissive.json", "spec.template.spec.containers[0].parameters[0].value"},
	} {
		r := call(t, http.MethodPost, url+"/v1/apply", containerApp("pu", [2]string{c.key, c.value}))
		wantStatus(t, r, http.StatusUnprocessableEntity)
		if e := decodeError(t, r); len(e.Details) != 1 || e.Details[0].Field != c.field {
			t.Errorf("%s=%s: %+v, want %s", c.key, c.value, e, c.field)
		}
	}
}
