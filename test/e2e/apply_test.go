package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// A directory with every kind, JSON and YAML mixed.
var kindsDir = map[string]string{
	"configmap.json": `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"cfg","namespace":"e2e"},
		"datas":{"app.conf":{"type":"file","content":"bGlzdGVuIDgwODAK"}}}`,
	"secret.json": `{"apiVersion":"v4","kind":"secret","metadata":{"name":"db-pass","namespace":"e2e"},
		"datas":{"password":{"content":"czNjcjN0"}}}`,
	"process.yaml": `apiVersion: v4
kind: process
metadata: {name: worker, namespace: e2e, labels: {app: worker}}
spec:
  instance: 2
  template:
    spec:
      processes:
        - procName: worker
          startCmd: ./worker --port ${ports.rpc} --dir ${workPath}
          workPath: ${work_base_dir}/${namespace}.${processname}.${instanceid}
          ports: [{name: rpc, hostPort: 0}]
`,
	"app-and-service.yaml": `apiVersion: v4
kind: application
metadata: {name: web, namespace: e2e, labels: {app: web}}
spec:
  instance: 3
  template:
    spec:
      networkMode: BRIDGE
      containers:
        - image: test/busybox:1
          command: httpd
          args: ["-f", "-p", "80"]
          ports: [{name: http, containerPort: 80, hostPort: 0}]
---
apiVersion: v4
kind: service
metadata: {name: web, namespace: e2e}
spec:
  selector: {app: web}
  ports: [{name: http, protocol: http, servicePort: 80}]
`,
	"deployment.yaml": `apiVersion: v4
kind: deployment
metadata: {name: api, namespace: e2e}
spec:
  instance: 2
  template:
    spec:
      containers: [{image: test/busybox:1, command: sleep, args: ["3600"]}]
  strategy:
    type: RollingUpdate
    rollingupdate: {maxUnavilable: 1, maxSurge: 1, rollingOrder: CreateFirst}
`,
	"daemonset.yaml": `apiVersion: v4
kind: daemonset
metadata: {name: node-exporter, namespace: e2e}
spec:
  template:
    spec:
      networkMode: HOST
      containers: [{image: test/busybox:1, command: sleep, args: ["3600"]}]
`,
}

var kindsObjects = []string{
	"application e2e/web", "configmap e2e/cfg", "daemonset e2e/node-exporter", "deployment e2e/api",
	"process e2e/worker", "secret e2e/db-pass", "service e2e/web",
}

func TestApplyDirectoryCreatesThenReportsUnchanged(t *testing.T) {
	s := startDev(t, t.TempDir(), "--agent=false") // specs only: nothing should run
	dir := writeFiles(t, kindsDir)

	out := s.mustBerth("apply", "-f", dir)
	for _, obj := range kindsObjects {
		if !strings.Contains(out, obj+" created") {
			t.Errorf("first apply: want %q created in:\n%s", obj, out)
		}
	}
	out = s.mustBerth("apply", "-f", dir)
	for _, obj := range kindsObjects {
		if !strings.Contains(out, obj+" unchanged") {
			t.Errorf("second apply: want %q unchanged in:\n%s", obj, out)
		}
	}

	// One change: only that object is updated.
	changed := map[string]string{}
	for k, v := range kindsDir {
		changed[k] = v
	}
	changed["process.yaml"] = strings.Replace(kindsDir["process.yaml"], "instance: 2", "instance: 4", 1)
	out = s.mustBerth("apply", "-f", writeFiles(t, changed))
	if !strings.Contains(out, "process e2e/worker updated") || strings.Count(out, "unchanged") != len(kindsObjects)-1 {
		t.Errorf("third apply: want only the process updated:\n%s", out)
	}

	var list struct {
		Items []struct {
			Metadata struct{ Name, ResourceVersion, CreationTimestamp string }
			Spec     struct{ Instance int }
		}
	}
	if err := json.Unmarshal([]byte(s.mustBerth("get", "processes", "-n", "e2e", "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Spec.Instance != 4 || list.Items[0].Metadata.ResourceVersion == "" || list.Items[0].Metadata.CreationTimestamp == "" {
		t.Errorf("get -o json: %+v", list.Items)
	}
	table := s.mustBerth("get", "apps", "-A")
	if !strings.Contains(table, "NAMESPACE") || !strings.Contains(table, "e2e") || !strings.Contains(table, "web") {
		t.Errorf("get apps -A table:\n%s", table)
	}
	def := s.mustBerth("get", "deployment", "api", "-n", "e2e", "--definition")
	if def != kindsDir["deployment.yaml"] {
		t.Errorf("--definition must print the document as submitted, got:\n%q", def)
	}
}

func TestApplyBadFileChangesNothingAndListsEveryError(t *testing.T) {
	s := startDev(t, t.TempDir(), "--agent=false") // specs only: nothing should run
	files := map[string]string{
		"good.json": kindsDir["configmap.json"],
		"seed.json": mustRead(t, "testdata/seed001_process.json"),
	}
	// Strict: what the default mode would take with a warning (the misplaced unionData,
	// the process URI's list of pull policies) is listed with the rest.
	r := s.berth("", "apply", "--validate=strict", "-f", writeFiles(t, files))
	if r.code == 0 {
		t.Fatalf("apply of a bad file succeeded:\n%s", r.stdout)
	}
	for _, want := range []string{
		"constraint.intersectionItem[3].unionData[1].unionData",
		"${hospip}", "did you mean ${hostip}",
		"${ports.http-service}",
		`"Never | Always | OnFailure"`,
		`"Always|IfNotPresent"`,
		`"HTTP|TCP|COMMAND|REMOTE_HTTP|REMOTE_TCP"`,
		`"http|https"`,
		"seed.json",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	// The default mode refuses it too (BCS refused its restart policy), without the
	// problems it takes with a warning.
	r = s.berth("", "apply", "-f", writeFiles(t, files))
	if r.code == 0 || !strings.Contains(r.stderr, `"Never | Always | OnFailure"`) || strings.Contains(r.stderr, "unionData[1].unionData") {
		t.Errorf("the default mode: %d\n%s", r.code, r.stderr)
	}
	out := s.mustBerth("get", "configmaps", "-A", "-o", "name")
	if strings.TrimSpace(out) != "" {
		t.Errorf("nothing may be created when one file is bad, found:\n%s", out)
	}
	// A key BCS's decoder dropped is dropped by default, with a warning on stderr.
	cm := strings.Replace(kindsDir["configmap.json"], `"datas"`, `"bogus": 1, "datas"`, 1)
	if r := s.berth(cm, "apply", "-f", "-"); r.code != 0 || !strings.Contains(r.stderr, `warning: bogus unknown field "bogus" is dropped, as BCS's decoder did`) {
		t.Errorf("a dropped key: %+v", r)
	}
	s.mustBerth("delete", "configmap", "cfg", "-n", "e2e")

	// The fixed seed applies, with the configmap and the secret it names.
	out = s.mustBerth("apply", "-f", "testdata/seed001_refs.json", "-f", "testdata/seed001_process_fixed.json")
	if !strings.Contains(out, "process ns-a/gamesvc created") {
		t.Errorf("fixed seed: %s", out)
	}
}

func TestApplyFromStdin(t *testing.T) {
	s := startDev(t, t.TempDir(), "--agent=false") // specs only: nothing should run
	r := s.berth(kindsDir["secret.json"], "apply", "-f", "-")
	if r.code != 0 || !strings.Contains(r.stdout, "secret e2e/db-pass created") {
		t.Fatalf("apply -f -: %+v", r)
	}
	desc := s.mustBerth("describe", "secret", "db-pass", "-n", "e2e")
	if strings.Contains(desc, "czNjcjN0") || strings.Contains(desc, "s3cr3t") {
		t.Errorf("describe must not show secret values:\n%s", desc)
	}
	out := s.mustBerth("delete", "secret", "db-pass", "-n", "e2e")
	if !strings.Contains(out, "deleted") {
		t.Errorf("delete: %s", out)
	}
	if r := s.berth("", "get", "secret", "db-pass", "-n", "e2e"); r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Errorf("get after delete: %+v", r)
	}
}
