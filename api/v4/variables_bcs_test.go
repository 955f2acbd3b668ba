package v4

import (
	"fmt"
	"strings"
	"testing"
)

// A container's ${bcs.*} variables are checked at admission; its other ${...} are its own.
func TestContainerVariablesAreChecked(t *testing.T) {
	app := `{"apiVersion":"v4","kind":"application","metadata":{"name":"a"},"spec":{"instance":1,"template":{"spec":{"containers":[{"image":"x",` +
		`"ports":[{"name":"http","containerPort":8080}],%s}]}}}}`
	for _, tc := range []struct{ name, fields, err string }{
		{"known", `"args":["--port=${bcs.ports.http}","${bcs.namespace}"],"env":[{"name":"A_${bcs.instanceid}","value":"${bcs.taskgroupname}"}]`, ""},
		{"the container's own", `"command":"sh -c 'echo ${HOME} $${x}'"`, ""},
		{"a typo", `"args":["${bcs.hsotip}"]`, "spec.template.spec.containers[0].args[0]: unknown variable ${bcs.hsotip} (did you mean ${bcs.hostip}?)"},
		{"an undeclared port", `"env":[{"name":"P","value":"${bcs.ports.grpc}"}]`, `spec.template.spec.containers[0].env[0].value: ${bcs.ports.grpc}: port "grpc" is not declared`},
		{"unterminated", `"workingDir":"/srv/${bcs.appname"`, "unterminated variable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(fmt.Sprintf(app, tc.fields)))
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse = %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// Rendering replaces the ${bcs.*} references only, each in every string that may hold one.
func TestRenderContainer(t *testing.T) {
	vars := ContainerVariables{Namespace: "ns", AppName: "web", InstanceID: 2, HostIP: "10.0.0.1", TaskGroupID: "2.web.ns.berth.1", TaskGroupName: "web-2",
		Ports: map[string]int{"http": 31000}}
	c := Container{Command: "${bcs.appname} ${PATH}", Args: []string{"${bcs.ports.http}"}, WorkingDir: "/srv/${bcs.instanceid}",
		Env:        []EnvVar{{Name: "ID", Value: "${bcs.taskgroupid}@${bcs.hostip}"}},
		ConfigMaps: []ConfigMapRef{{Name: "cfg", Items: []ConfigMapItem{{Type: "file", DataKey: "k", KeyOrPath: "/etc/${bcs.appname}/app.conf"}}}},
		Secrets:    []SecretRef{{SecretName: "s", Items: []SecretItem{{Type: "file", DataKey: "k", KeyOrPath: "/run/${bcs.taskgroupname}.key"}}}}}
	out, err := vars.RenderContainer(c)
	if err != nil {
		t.Fatal(err)
	}
	if out.Command != "web ${PATH}" || out.Args[0] != "31000" || out.WorkingDir != "/srv/2" || out.Env[0].Value != "2.web.ns.berth.1@10.0.0.1" ||
		out.ConfigMaps[0].Items[0].KeyOrPath != "/etc/web/app.conf" || out.Secrets[0].Items[0].KeyOrPath != "/run/web-2.key" {
		t.Errorf("rendered %+v", out)
	}
	if c.Args[0] != "${bcs.ports.http}" || c.Env[0].Value != "${bcs.taskgroupid}@${bcs.hostip}" ||
		c.ConfigMaps[0].Items[0].KeyOrPath != "/etc/${bcs.appname}/app.conf" || c.Secrets[0].Items[0].KeyOrPath != "/run/${bcs.taskgroupname}.key" {
		t.Errorf("the original changed: %+v", c)
	}
	if _, err := vars.RenderContainer(Container{Args: []string{"${bcs.ports.nope}"}}); err == nil {
		t.Error("an unknown port rendered")
	}
}
