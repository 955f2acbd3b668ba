package v4

import (
	"strings"
	"testing"
)

func withRuntime(rt string) Object {
	return appWith(func(a *Application) { a.Spec.Template.Spec.Runtime = rt })
}

// A runtime names a handler the node's operator declared; it is never a path, so no
// spec can make the agent (root) run a binary of its choosing.
func TestRuntimeRules(t *testing.T) {
	const f = "spec.template.spec.runtime"
	runRules(t, []ruleCase{
		{"absolute path", withRuntime("/bin/sh"), f, "not a path"},
		{"climbs", withRuntime("../x"), f, "not a path"},
		{"dot-dot", withRuntime(".."), f, "not a path"},
		{"dot", withRuntime("."), f, "not a path"},
		{"relative path", withRuntime("bin/runc"), f, "not a path"},
		{"leading dot", withRuntime(".runc"), f, "not a path"},
		{"trailing dash", withRuntime("runc-"), f, "not a path"},
		{"upper case", withRuntime("Kata"), f, "lowercase"},
		{"space", withRuntime("runc --root /"), f, "not a path"},
		{"NUL", withRuntime("runc\x00"), f, "not a path"},
		{"backslash", withRuntime(`..\x`), f, "not a path"},
		{"option", withRuntime("--help"), f, "not a path"},
		{"shim type with slash", withRuntime("io.containerd/runsc"), f, "not a path"},
		{"too long", withRuntime(strings.Repeat("r", MaxRuntimeName+1)), f, "at most 63"},
		{"processes", procWith(func(p *Process) { p.Spec.Template.Spec.Runtime = "runc" }), f, "processes run on the host"},
	})
}

func TestRuntimeAccepted(t *testing.T) {
	for _, rt := range []string{"", "runc", "crun", "runsc", "kata", "kata-qemu", "io.containerd.runc.v2", "nvidia", "r", strings.Repeat("r", MaxRuntimeName)} {
		if errs := Validate(withRuntime(rt)); len(errs) > 0 {
			t.Errorf("%q: unexpected errors %v", rt, errs)
		}
	}
	d := baseDeploy()
	d.Spec.Template.Spec.Runtime = "../x"
	if errs := Validate(d); len(errs) == 0 || errs[0].Field != "spec.template.spec.runtime" {
		t.Errorf("a deployment's runtime: %v", errs)
	}
}

// The key decodes from YAML as users write it.
func TestRuntimeParse(t *testing.T) {
	doc := "apiVersion: v4\nkind: application\nmetadata: {name: a}\nspec:\n  instance: 1\n  template:\n    spec:\n" +
		"      runtime: crun\n      networkMode: HOST\n      containers:\n      - {image: busybox}\n"
	objs, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if rt := objs[0].Object.(*Application).Spec.Template.Spec.Runtime; rt != "crun" {
		t.Fatalf("runtime %q", rt)
	}
}
