package v4

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Valid minimal objects of every kind; each validation case breaks one of them.
func baseApp() *Application {
	a := &Application{Workload{
		TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindApplication},
		Metadata: ObjectMeta{Name: "web", Namespace: "ns-a"},
		Spec: WorkloadSpec{Instance: 2, Template: PodTemplate{Spec: PodSpec{
			Containers: []Container{{Name: "main", Image: "test/busybox:1", Command: "httpd",
				Ports: []Port{{Name: "http", ContainerPort: 80, HostPort: 8080}}}},
		}}},
	}}
	Default(a)
	return a
}

func baseProc() *Process {
	p := &Process{Workload{
		TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindProcess},
		Metadata: ObjectMeta{Name: "gamesvc", Namespace: "ns-a"},
		Spec: WorkloadSpec{Instance: 1, Template: PodTemplate{Spec: PodSpec{
			Processes: []ProcessTask{{ProcName: "gamesvr", StartCmd: "./start.sh ${ports.http}",
				WorkPath: "${work_base_dir}/${instanceid}", PidFile: "${workPath}/pid",
				Ports: []Port{{Name: "http", HostPort: 0}}}},
		}}},
	}}
	Default(p)
	return p
}

func baseDeploy() *Deployment {
	d := &Deployment{TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindDeployment},
		Metadata: ObjectMeta{Name: "web"},
		Spec: DeploymentSpec{Instance: 3, Template: &PodTemplate{Spec: PodSpec{
			Containers: []Container{{Image: "test/busybox:1"}}}}}}
	Default(d)
	return d
}

func baseService() *Service {
	s := &Service{TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindService},
		Metadata: ObjectMeta{Name: "web"},
		Spec: ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []ServicePort{{Name: "http", Protocol: "tcp", ServicePort: 80}}}}
	Default(s)
	return s
}

func baseConfigMap() *ConfigMap {
	c := &ConfigMap{TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindConfigMap},
		Metadata: ObjectMeta{Name: "cfg"},
		Datas: map[string]ConfigMapData{"a.conf": {Type: "file", Content: "aGVsbG8="},
			"remote": {Type: "https", Content: "https://example.test/x"}}}
	Default(c)
	return c
}

func baseSecret() *Secret {
	s := &Secret{TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindSecret},
		Metadata: ObjectMeta{Name: "mySecret"},
		Datas:    map[string]SecretData{"abc": {Content: "c2VjcmV0"}}}
	Default(s)
	return s
}

func container(a *Application) *Container { return &a.Spec.Template.Spec.Containers[0] }
func proc(p *Process) *ProcessTask        { return &p.Spec.Template.Spec.Processes[0] }

func constraintOf(d ...ConstraintData) *Constraint {
	return &Constraint{IntersectionItem: []ConstraintItem{{UnionData: d}}}
}

func appWith(f func(a *Application)) Object { a := baseApp(); f(a); return a }
func procWith(f func(p *Process)) Object    { p := baseProc(); f(p); return p }

func TestBaseObjectsAreValid(t *testing.T) {
	for _, obj := range []Object{baseApp(), baseProc(), baseDeploy(), baseService(), baseConfigMap(), baseSecret(),
		&Daemonset{TypeMeta: TypeMeta{"v4", KindDaemonset}, Metadata: ObjectMeta{Name: "agent", Namespace: DefaultNamespace},
			Spec: DaemonsetSpec{Template: PodTemplate{Spec: PodSpec{Containers: []Container{{Image: "x"}}, NetworkMode: "HOST"}}}}} {
		Default(obj)
		if errs := Validate(obj); len(errs) > 0 {
			t.Errorf("%s: unexpected errors: %v", obj.GetKind(), errs)
		}
	}
}

type ruleCase struct {
	name  string
	obj   Object
	field string // expected path
	msg   string // expected substring of the message
}

func runRules(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(tc.obj)
			for _, e := range errs {
				if e.Field == tc.field && strings.Contains(e.Message, tc.msg) {
					return
				}
			}
			t.Errorf("want %s: ...%s..., got %v", tc.field, tc.msg, errs)
		})
	}
}

func TestMetadataRules(t *testing.T) {
	runRules(t, []ruleCase{
		{"apiVersion", appWith(func(a *Application) { a.APIVersion = "v3" }), "apiVersion", `must be "v4"`},
		{"name required", appWith(func(a *Application) { a.Metadata.Name = "" }), "metadata.name", "required"},
		{"name too long", appWith(func(a *Application) { a.Metadata.Name = "a" + strings.Repeat("b", 63) }), "metadata.name", "at most 63"},
		{"name with dot", appWith(func(a *Application) { a.Metadata.Name = "web.v1" }), "metadata.name", "must not contain '.'"},
		{"name digit first", appWith(func(a *Application) { a.Metadata.Name = "1web" }), "metadata.name", "must not start with a digit"},
		{"name all digits", appWith(func(a *Application) { a.Metadata.Name = "123" }), "metadata.name", "must not start with a digit"},
		{"name upper case", appWith(func(a *Application) { a.Metadata.Name = "Web" }), "metadata.name", "lowercase"},
		{"namespace bad", appWith(func(a *Application) { a.Metadata.Namespace = "ns_a" }), "metadata.namespace", "lowercase"},
		{"label key", appWith(func(a *Application) { a.Metadata.Labels = map[string]string{"-bad": "x"} }), "metadata.labels.-bad", "key must be"},
		{"label value", appWith(func(a *Application) { a.Metadata.Labels = map[string]string{"k": strings.Repeat("v", 300)} }), "metadata.labels.k", "value must be"},
		{"annotation key", appWith(func(a *Application) { a.Metadata.Annotations = map[string]string{"a b": "x"} }), `metadata.annotations["a b"]`, "key must be"},
		{"template label", appWith(func(a *Application) { a.Spec.Template.Metadata = &TemplateMeta{Labels: map[string]string{"k": "a\nb"}} }), "spec.template.metadata.labels.k", "value must be"},
		{"placement annotation", appWith(func(a *Application) { a.Metadata.Annotations = map[string]string{PlacementAnnotation: "pack"} }), `metadata.annotations["berth.io/placement"]`, `"spread", "binpack"`},
		{"configmap name", func() Object { c := baseConfigMap(); c.Metadata.Name = "my.cfg"; return c }(), "metadata.name", "no '.'"},
	})
}

func TestWorkloadRules(t *testing.T) {
	runRules(t, []ruleCase{
		{"instance negative", appWith(func(a *Application) { a.Spec.Instance = -1 }), "spec.instance", "must not be negative"},
		{"instance too many", appWith(func(a *Application) { a.Spec.Instance = MaxInstances + 1 }), "spec.instance", "at most"},
		{"both task kinds", appWith(func(a *Application) { a.Spec.Template.Spec.Processes = proc(baseProc()).asList() }), "spec.template.spec", "cannot coexist"},
		{"app with processes", appWith(func(a *Application) {
			a.Spec.Template.Spec.Containers = nil
			a.Spec.Template.Spec.Processes = proc(baseProc()).asList()
		}), "spec.template.spec.processes", `use kind "process"`},
		{"process with containers", procWith(func(p *Process) {
			p.Spec.Template.Spec.Processes = nil
			p.Spec.Template.Spec.Containers = baseApp().Spec.Template.Spec.Containers
		}), "spec.template.spec.containers", `use kind "application"`},
		{"process without tasks", procWith(func(p *Process) { p.Spec.Template.Spec.Processes = nil }), "spec.template.spec.processes", "at least one process"},
		{"app without tasks", appWith(func(a *Application) { a.Spec.Template.Spec.Containers = nil }), "spec.template.spec.containers", "at least one container"},
		{"networktype", appWith(func(a *Application) { a.Spec.Template.Spec.NetworkType = "calico" }), "spec.template.spec.networktype", `"cnm", "cni"`},
		{"process network", procWith(func(p *Process) { p.Spec.Template.Spec.NetworkMode = "BRIDGE" }), "spec.template.spec.networkMode", "host network"},
		{"netLimit", appWith(func(a *Application) { a.Spec.Template.Spec.NetLimit = &NetLimit{EgressLimit: -1} }), "spec.template.spec.netLimit.egressLimit", "negative"},
		{"USER without net", appWith(func(a *Application) { a.Spec.Template.Spec.NetworkMode = "USER" }), "spec.template.spec.networkMode", `"net" parameter`},
		{"policy", appWith(func(a *Application) { a.RestartPolicy.Policy = "Sometimes" }), "restartPolicy.policy", `"Never", "Always", "OnFailure"`},
		{"policy alternatives", appWith(func(a *Application) { a.RestartPolicy.Policy = "Never | Always" }), "restartPolicy.policy", "pick exactly one"},
		{"policy typo", appWith(func(a *Application) { a.RestartPolicy.Policy = "OnFailur" }), "restartPolicy.policy", `did you mean "OnFailure"`},
		{"interval", appWith(func(a *Application) { a.RestartPolicy.Interval = -1 }), "restartPolicy.interval", "negative"},
		{"backoff", appWith(func(a *Application) { a.RestartPolicy.Backoff = -1 }), "restartPolicy.backoff", "negative"},
		{"maxtimes", appWith(func(a *Application) { a.RestartPolicy.MaxTimes = -1 }), "restartPolicy.maxtimes", "negative"},
		{"hostRetainTime", appWith(func(a *Application) { a.RestartPolicy.HostRetainTime = -1 }), "restartPolicy.hostRetainTime", "negative"},
		{"gracePeriod", appWith(func(a *Application) { a.KillPolicy.GracePeriod = -5 }), "killPolicy.gracePeriod", "negative"},
	})
}

func (p *ProcessTask) asList() []ProcessTask { return []ProcessTask{*p} }

func TestConstraintRules(t *testing.T) {
	with := func(d ...ConstraintData) Object {
		return appWith(func(a *Application) { a.Constraint = constraintOf(d...) })
	}
	const p = "constraint.intersectionItem[0].unionData[0]"
	runRules(t, []ruleCase{
		{"empty item", appWith(func(a *Application) { a.Constraint = &Constraint{IntersectionItem: []ConstraintItem{{}}} }), "constraint.intersectionItem[0].unionData", "at least one"},
		{"name", with(ConstraintData{Operate: OpUnique}), p + ".name", "required"},
		{"type range", with(ConstraintData{Name: "x", Operate: OpUnique, Type: 7}), p + ".type", "must be 1"},
		{"scalar missing", with(ConstraintData{Name: "x", Operate: OpGreater, Type: 1}), p + ".scalar", "required for type 1"},
		{"ranges missing", with(ConstraintData{Name: "x", Operate: OpUnique, Type: 2}), p + ".ranges", "required for type 2"},
		{"range order", with(ConstraintData{Name: "x", Operate: OpUnique, Type: 2, Ranges: []RangeValue{{5, 1}}}), p + ".ranges[0]", "after end"},
		{"text missing", with(ConstraintData{Name: "x", Operate: OpCluster, Type: 3}), p + ".text", "required for type 3"},
		{"set missing", with(ConstraintData{Name: "x", Operate: OpCluster, Type: 4}), p + ".set.item", "required for type 4"},
		{"maxper type", with(ConstraintData{Name: "idc", Operate: OpMaxPer, Type: 4, Set: &SetValue{[]string{"a"}}}), p + ".type", "MAXPER needs type 3"},
		{"maxper value", with(ConstraintData{Name: "idc", Operate: OpMaxPer, Type: 3, Text: &TextValue{"five"}}), p + ".text.value", "positive integer"},
		{"cluster type", with(ConstraintData{Name: "idc", Operate: OpCluster, Type: 1, Scalar: &ScalarValue{1}}), p + ".type", "CLUSTER needs type 3 (text) or 4 (set)"},
		{"groupby type", with(ConstraintData{Name: "idc", Operate: OpGroupBy, Type: 3, Text: &TextValue{"a"}}), p + ".type", "GROUPBY needs type 4"},
		{"like pattern", with(ConstraintData{Name: "hostname", Operate: OpLike, Type: 3, Text: &TextValue{"slave[("}}), p + ".text.value", "neither a valid glob"},
		{"unlike set pattern", with(ConstraintData{Name: "hostname", Operate: OpUnlike, Type: 4, Set: &SetValue{[]string{"ok", "a["}}}), p + ".set.item[1]", "neither a valid glob"},
		{"exclude name", with(ConstraintData{Name: "idc", Operate: OpExclude, Type: 4, Set: &SetValue{[]string{"a:b"}}}), p + ".name", `must be "label"`},
		{"exclude item", with(ConstraintData{Name: "label", Operate: OpExclude, Type: 4, Set: &SetValue{[]string{"ab"}}}), p + ".set.item[0]", `"key:value"`},
		{"greater type", with(ConstraintData{Name: "cpus", Operate: OpGreater, Type: 3, Text: &TextValue{"1"}}), p + ".type", "GREATER needs type 1"},
		{"toleration value", with(ConstraintData{Name: "dedicated", Operate: OpToleration, Type: 3, Text: &TextValue{""}}), p + ".text.value", "taint value"},
		{"operator", with(ConstraintData{Name: "idc", Operate: "CLUSTR"}), p + ".operate", `did you mean "CLUSTER"`},
	})
}

func TestContainerRules(t *testing.T) {
	const c0 = "spec.template.spec.containers[0]"
	param := func(k, v string) Object {
		return appWith(func(a *Application) { container(a).Parameters = []Parameter{{Key: k, Value: v}} })
	}
	runRules(t, []ruleCase{
		{"image", appWith(func(a *Application) { container(a).Image = " " }), c0 + ".image", "required"},
		{"type", appWith(func(a *Application) { container(a).Type = "RKT" }), c0 + ".type", `"DOCKER", "MESOS"`},
		{"pull policy", appWith(func(a *Application) { container(a).ImagePullPolicy = "Always|IfNotPresent" }), c0 + ".imagePullPolicy", "pick exactly one"},
		{"hostname", appWith(func(a *Application) { container(a).Hostname = "bad_host" }), c0 + ".hostname", "valid host name"},
		{"parameter unknown", param("ulimits", "nofile=1"), c0 + ".parameters[0].key", `did you mean "ulimit"`},
		{"parameter ulimit", param("ulimit", "nofile"), c0 + ".parameters[0].value", "name=limit"},
		{"parameter ulimit number", param("ulimit", "nofile=x:2"), c0 + ".parameters[0].value", "not an integer"},
		{"parameter bool", param("oom-kill-disable", "yes please"), c0 + ".parameters[0].value", "true or false"},
		{"parameter shm", param("shm-size", "-3"), c0 + ".parameters[0].value", "positive number"},
		{"parameter range", param("memory-swappiness", "101"), c0 + ".parameters[0].value", "from 0 to 100"},
		{"parameter device", param("device-read-bps", "sda:1mb"), c0 + ".parameters[0].value", "/dev/path:limit"},
		{"parameter empty", param("ipc", ""), c0 + ".parameters[0].value", "value required"},
		{"port name", appWith(func(a *Application) { container(a).Ports[0].Name = "" }), c0 + ".ports[0].name", "required"},
		{"port name chars", appWith(func(a *Application) { container(a).Ports[0].Name = "a b" }), c0 + ".ports[0].name", "letters, digits"},
		{"port name unique", appWith(func(a *Application) {
			a.Spec.Template.Spec.Containers = append(a.Spec.Template.Spec.Containers, Container{Image: "x", Ports: []Port{{Name: "http", Protocol: "tcp"}}})
		}), "spec.template.spec.containers[1].ports[0].name", "unique in the pod"},
		{"protocol", appWith(func(a *Application) { container(a).Ports[0].Protocol = "sctp" }), c0 + ".ports[0].protocol", `"tcp", "udp", "http", "https"`},
		{"containerPort", appWith(func(a *Application) { container(a).Ports[0].ContainerPort = 70000 }), c0 + ".ports[0].containerPort", "0-65535"},
		{"hostPort", appWith(func(a *Application) { container(a).Ports[0].HostPort = -2 }), c0 + ".ports[0].hostPort", "0-65535"},
		{"host port twice", appWith(func(a *Application) {
			container(a).Ports = append(container(a).Ports, Port{Name: "b", ContainerPort: 81, HostPort: 8080, Protocol: "tcp"})
		}), c0 + ".ports[1]", "host port 8080 is already used"},
		{"host mode port twice", appWith(func(a *Application) {
			a.Spec.Template.Spec.NetworkMode = "HOST"
			container(a).Ports = []Port{{Name: "a", ContainerPort: 90, Protocol: "tcp"}, {Name: "b", ContainerPort: 90, Protocol: "tcp"}}
		}), c0 + ".ports[1]", "host port 90"},
		{"env name", appWith(func(a *Application) { container(a).Env = []EnvVar{{Value: "x"}} }), c0 + ".env[0].name", "required"},
		{"env name chars", appWith(func(a *Application) { container(a).Env = []EnvVar{{Name: "A=B"}} }), c0 + ".env[0].name", "must not contain '='"},
		{"env twice", appWith(func(a *Application) { container(a).Env = []EnvVar{{Name: "A"}, {Name: "A"}} }), c0 + ".env[1].name", "set twice"},
		{"env both", appWith(func(a *Application) {
			container(a).Env = []EnvVar{{Name: "A", Value: "1", ValueFrom: &EnvVarSource{&ResourceFieldRef{"limits.cpu"}}}}
		}), c0 + ".env[0]", "cannot both be set"},
		{"env ref missing", appWith(func(a *Application) { container(a).Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{}}} }), c0 + ".env[0].valueFrom.resourceFieldRef", "required"},
		{"env ref", appWith(func(a *Application) {
			container(a).Env = []EnvVar{{Name: "A", ValueFrom: &EnvVarSource{&ResourceFieldRef{"limits.gpu"}}}}
		}), c0 + ".env[0].valueFrom.resourceFieldRef.resource", "limits.cpu"},
		{"cpu number", appWith(func(a *Application) { container(a).Resources = &Resources{Limits: &ResourceList{CPU: "two"}} }), c0 + ".resources.limits.cpu", "must be a number"},
		{"cpu negative", appWith(func(a *Application) { container(a).Resources = &Resources{Requests: &ResourceList{CPU: "-1"}} }), c0 + ".resources.requests.cpu", "must not be negative"},
		{"request over limit", appWith(func(a *Application) {
			container(a).Resources = &Resources{Requests: &ResourceList{CPU: "2"}, Limits: &ResourceList{CPU: "1"}}
		}), c0 + ".resources.requests.cpu", "exceeds limit"},
		{"extended name", appWith(func(a *Application) { container(a).Resources.ExtendedResources = []ExtendedResource{{Value: 1}} }), c0 + ".resources.extendedResources[0].name", "required"},
		{"extended value", appWith(func(a *Application) { container(a).Resources.ExtendedResources = []ExtendedResource{{Name: "gpu"}} }), c0 + ".resources.extendedResources[0].value", "greater than 0"},
		{"mountPath", appWith(func(a *Application) { container(a).Volumes = []Volume{{Volume: VolumeMount{HostPath: "/a"}}} }), c0 + ".volumes[0].volume.mountPath", "required"},
		{"mountPath relative", appWith(func(a *Application) { container(a).Volumes = []Volume{{Volume: VolumeMount{MountPath: "data"}}} }), c0 + ".volumes[0].volume.mountPath", "absolute"},
		{"mountPath twice", appWith(func(a *Application) {
			container(a).Volumes = []Volume{{Volume: VolumeMount{MountPath: "/d"}}, {Volume: VolumeMount{MountPath: "/d/"}}}
		}), c0 + ".volumes[1].volume.mountPath", "mounted twice"},
		{"hostPath relative", appWith(func(a *Application) {
			container(a).Volumes = []Volume{{Volume: VolumeMount{HostPath: "x", MountPath: "/d"}}}
		}), c0 + ".volumes[0].volume.hostPath", "absolute"},
	})
}

func TestProcessRules(t *testing.T) {
	const p0 = "spec.template.spec.processes[0]"
	runRules(t, []ruleCase{
		{"procName", procWith(func(p *Process) { proc(p).ProcName = "" }), p0 + ".procName", "required"},
		{"procName path", procWith(func(p *Process) { proc(p).ProcName = "/usr/bin/x" }), p0 + ".procName", "not a path"},
		{"startCmd", procWith(func(p *Process) { proc(p).StartCmd = "" }), p0 + ".startCmd", "required"},
		{"user", procWith(func(p *Process) { proc(p).User = "Bad User" }), p0 + ".user", "user name"},
		{"startGracePeriod", procWith(func(p *Process) { proc(p).StartGracePeriod = -1 }), p0 + ".startGracePeriod", "negative"},
		{"containerPort", procWith(func(p *Process) { proc(p).Ports[0].ContainerPort = 80 }), p0 + ".ports[0].containerPort", "set hostPort"},
		{"hostPort twice", procWith(func(p *Process) {
			proc(p).Ports = []Port{{Name: "a", HostPort: 80, Protocol: "tcp"}, {Name: "b", HostPort: 80, Protocol: "tcp"}}
			proc(p).StartCmd = "x"
		}), p0 + ".ports[1]", "already used"},
		{"uri required", procWith(func(p *Process) { proc(p).URIs = []URI{{PullPolicy: PullAlways}} }), p0 + ".uris[0].value", "required"},
		{"uri scheme", procWith(func(p *Process) { proc(p).URIs = []URI{{Value: "ftp://h/x.tgz", PullPolicy: PullAlways}} }), p0 + ".uris[0].value", "http://, https:// or file://"},
		{"uri host", procWith(func(p *Process) { proc(p).URIs = []URI{{Value: "http:///x.tgz", PullPolicy: PullAlways}} }), p0 + ".uris[0].value", "must name a host"},
		{"uri pullPolicy", procWith(func(p *Process) { proc(p).URIs = []URI{{Value: "http://h/x", PullPolicy: "Sometimes"}} }), p0 + ".uris[0].pullPolicy", "IfNotPresent"},
		{"uri pwd without user", procWith(func(p *Process) { proc(p).URIs = []URI{{Value: "http://h/x", Pwd: "p", PullPolicy: PullAlways}} }), p0 + ".uris[0].user", "required when pwd"},
		{"limit -2", procWith(func(p *Process) { proc(p).Resources = &Resources{Limits: &ResourceList{CPU: "-2"}} }), p0 + ".resources.limits.cpu", "-1 means unlimited"},
		{"unknown variable", procWith(func(p *Process) { proc(p).StopCmd = "kill ${hospip}" }), p0 + ".stopCmd", "did you mean ${hostip}"},
		{"undeclared port", procWith(func(p *Process) { proc(p).Env = []EnvVar{{Name: "P", Value: "${ports.htp}"}} }), p0 + ".env[0].value", "did you mean ${ports.http}"},
		{"unterminated", procWith(func(p *Process) { proc(p).StartCmd = "./run ${namespace" }), p0 + ".startCmd", "unterminated"},
		{"workPath self", procWith(func(p *Process) { proc(p).WorkPath = "${workPath}/x" }), p0 + ".workPath", "cannot be used in workPath"},
		{"pidFile self", procWith(func(p *Process) { proc(p).PidFile = "${pidFile}.x" }), p0 + ".pidFile", "pidFile itself"},
		{"variable in uri", procWith(func(p *Process) { proc(p).URIs = []URI{{Value: "http://h/${nmespace}.tgz", PullPolicy: PullAlways}} }), p0 + ".uris[0].value", "did you mean ${namespace}"},
		{"workPath up", procWith(func(p *Process) { proc(p).WorkPath = "${work_base_dir}/../.." }), p0 + ".workPath", "'..' segments"},
		{"pidFile up", procWith(func(p *Process) { proc(p).PidFile = "../../x.pid" }), p0 + ".pidFile", "'..' segments"},
		{"outputDir up", procWith(func(p *Process) {
			proc(p).URIs = []URI{{Value: "http://h/x.tgz", OutputDir: "${workPath}/../../etc", PullPolicy: PullAlways}}
		}), p0 + ".uris[0].outputDir", "'..' segments"},
		{"file uri up", procWith(func(p *Process) { proc(p).URIs = []URI{{Value: "file:///data/../etc/shadow", PullPolicy: PullAlways}} }), p0 + ".uris[0].value", "'..' segments"},
	})
}

func TestHealthCheckRules(t *testing.T) {
	const h = "spec.template.spec.containers[0].healthChecks"
	with := func(checks ...HealthCheck) Object {
		return appWith(func(a *Application) { container(a).HealthChecks = checks; defaultChecks(container(a).HealthChecks) })
	}
	httpCheck := HealthCheck{Type: CheckHTTP, HTTP: &HTTPCheck{PortName: "http"}}
	runRules(t, []ruleCase{
		{"type", with(HealthCheck{Type: "PING"}), h + "[0].type", `"HTTP", "TCP"`},
		{"two local", with(httpCheck, HealthCheck{Type: CheckTCP, TCP: &TCPCheck{Port: 80}}), h + "[1].type", "only one of HTTP, TCP and COMMAND"},
		{"two remote http", with(HealthCheck{Type: CheckRemoteHTTP, HTTP: &HTTPCheck{Port: 1}}, HealthCheck{Type: CheckRemoteHTTP, HTTP: &HTTPCheck{Port: 1}}), h + "[1].type", "only one REMOTE_HTTP"},
		{"negative", with(HealthCheck{Type: CheckCommand, Command: &CommandCheck{"true"}, ConsecutiveFailures: -1}), h + "[0].consecutiveFailures", "negative"},
		{"http block", with(HealthCheck{Type: CheckHTTP}), h + "[0].http", "required"},
		{"tcp block", with(HealthCheck{Type: CheckRemoteTCP}), h + "[0].tcp", "required"},
		{"command", with(HealthCheck{Type: CheckCommand}), h + "[0].command.value", "required"},
		{"port big", with(HealthCheck{Type: CheckTCP, TCP: &TCPCheck{Port: 70000}}), h + "[0].tcp.port", "1-65535"},
		{"port negative", with(HealthCheck{Type: CheckTCP, TCP: &TCPCheck{Port: -1, PortName: "http"}}), h + "[0].tcp.port", "negative"},
		{"portName missing", with(HealthCheck{Type: CheckTCP, TCP: &TCPCheck{}}), h + "[0].tcp.portName", "required when port is 0"},
		{"portName undeclared", with(HealthCheck{Type: CheckHTTP, HTTP: &HTTPCheck{PortName: "htp"}}), h + "[0].http.portName", `did you mean "http"`},
		{"scheme", with(HealthCheck{Type: CheckTCP, TCP: &TCPCheck{Port: 1}, HTTP: &HTTPCheck{Scheme: "http|https", Path: "/"}}), h + "[0].http.scheme", "pick exactly one"},
		{"path", with(HealthCheck{Type: CheckHTTP, HTTP: &HTTPCheck{Port: 80, Path: "check"}}), h + "[0].http.path", "start with '/'"},
	})
}

func TestDeploymentRules(t *testing.T) {
	with := func(f func(d *Deployment)) Object { d := baseDeploy(); f(d); return d }
	const ru = "spec.strategy.rollingupdate"
	runRules(t, []ruleCase{
		{"instance", with(func(d *Deployment) { d.Spec.Instance = -1 }), "spec.instance", "must not be negative"},
		{"no template", with(func(d *Deployment) { d.Spec.Template = nil }), "spec.template", "a template, or a selector"},
		{"template checked", with(func(d *Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }), "spec.template.spec.containers[0].image", "required"},
		{"strategy", with(func(d *Deployment) { d.Spec.Strategy.Type = "BlueGreen" }), "spec.strategy.type", `"RollingUpdate", "Recreate"`},
		{"maxUnavailable", with(func(d *Deployment) { d.Spec.Strategy.RollingUpdate.MaxUnavailable = -1 }), ru + ".maxUnavailable", "negative"},
		{"maxSurge", with(func(d *Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = -1 }), ru + ".maxSurge", "negative"},
		{"upgradeDuration", with(func(d *Deployment) { d.Spec.Strategy.RollingUpdate.UpgradeDuration = -1 }), ru + ".upgradeDuration", "negative"},
		{"rollingOrder", with(func(d *Deployment) { d.Spec.Strategy.RollingUpdate.RollingOrder = "Random" }), ru + ".rollingOrder", "CreateFirst"},
		{"stepDeadline negative", with(func(d *Deployment) { d.Spec.Strategy.RollingUpdate.StepDeadline = -5 }), ru + ".stepDeadline", "between 1 and 86400"},
		{"stepDeadline too long", with(func(d *Deployment) { d.Spec.Strategy.RollingUpdate.StepDeadline = 86401 }), ru + ".stepDeadline", "between 1 and 86400"},
		{"selector label", with(func(d *Deployment) { d.Spec.Selector = map[string]string{"": "x"} }), `spec.selector[""]`, "key must be"},
	})
}

func TestServiceRules(t *testing.T) {
	with := func(f func(s *Service)) Object { s := baseService(); f(s); return s }
	runRules(t, []ruleCase{
		{"selector", with(func(s *Service) { s.Spec.Selector = nil }), "spec.selector", "at least one label"},
		{"type", with(func(s *Service) { s.Spec.Type = "NodePort" }), "spec.type", `"ClusterIP", "None"`},
		{"clusterIP", with(func(s *Service) { s.Spec.ClusterIP = []string{"10.0.0.300"} }), "spec.clusterIP[0]", "IP address"},
		{"too many ports", with(func(s *Service) {
			for i := range 101 {
				s.Spec.Ports = append(s.Spec.Ports, ServicePort{Name: fmt.Sprintf("p%d", i), Protocol: "tcp", ServicePort: 1000 + i})
			}
		}), "spec.ports", "at most 100"},
		{"clusterIP name", with(func(s *Service) { s.Spec.ClusterIP = []string{"10.0.0.1", "db.example.com", "bad_name.example"} }), "spec.clusterIP[2]", "DNS name"},
		{"ports", with(func(s *Service) { s.Spec.Ports = nil }), "spec.ports", "at least one port"},
		{"port name", with(func(s *Service) { s.Spec.Ports[0].Name = "" }), "spec.ports[0].name", "required"},
		{"port name chars", with(func(s *Service) { s.Spec.Ports[0].Name = "a.b" }), "spec.ports[0].name", "letters, digits"},
		{"port name twice", with(func(s *Service) { s.Spec.Ports = append(s.Spec.Ports, s.Spec.Ports[0]) }), "spec.ports[1].name", "used twice"},
		{"protocol", with(func(s *Service) { s.Spec.Ports[0].Protocol = "quic" }), "spec.ports[0].protocol", `"tcp"`},
		{"servicePort", with(func(s *Service) { s.Spec.Ports[0].ServicePort = 0 }), "spec.ports[0].servicePort", "1-65535"},
		{"targetPort", with(func(s *Service) { s.Spec.Ports[0].TargetPort = 70000 }), "spec.ports[0].targetPort", "0-65535"},
		{"nodePort", with(func(s *Service) { s.Spec.Ports[0].NodePort = -1 }), "spec.ports[0].nodePort", "0-65535"},
		{"path", with(func(s *Service) { s.Spec.Ports[0].Path = "api" }), "spec.ports[0].path", "start with '/'"},
		{"path chars", with(func(s *Service) { s.Spec.Ports[0].Path = "/a b" }), "spec.ports[0].path", "without spaces or quotes"},
		{"path quote", with(func(s *Service) { s.Spec.Ports[0].Path = `/a"` }), "spec.ports[0].path", "without spaces or quotes"},
		{"domainName", with(func(s *Service) { s.Spec.Ports[0].DomainName = "www.example.com }" }), "spec.ports[0].domainName", "DNS name"},
		{"group", with(func(s *Service) { s.Metadata.Labels = map[string]string{GroupLabel: "ext,Bad_G"} }), "metadata.labels.BCSGROUP", `"Bad_G"`},
		{"group empty", with(func(s *Service) { s.Metadata.Labels = map[string]string{GroupLabel: " , "} }), "metadata.labels.BCSGROUP", "at least one group"},
		{"balance", with(func(s *Service) { s.Metadata.Labels = map[string]string{BalanceLabel: "random"} }), "metadata.labels.BCSBALANCE", `"leastconn"`},
		{"weight", with(func(s *Service) { s.Metadata.Labels = map[string]string{WeightLabelPrefix + "web": "300"} }), "metadata.labels.BCS-WEIGHT-web", "0-256"},
		{"maxconn", with(func(s *Service) { s.Metadata.Labels = map[string]string{MaxConnLabel: "-1"} }), "metadata.labels.BCSMAXCONN", "1-1000000"},
	})
}

func TestServiceLoadBalanceLabels(t *testing.T) {
	s := baseService()
	s.Metadata.Labels = map[string]string{GroupLabel: "external, internal,external", BalanceLabel: "LeastConn",
		WeightLabelPrefix + "canary": "0", MaxConnLabel: "500"}
	if g := s.LBGroups(); !slices.Equal(g, []string{"external", "internal"}) || !s.InLBGroup("internal") || s.InLBGroup("other") {
		t.Errorf("groups %v", g)
	}
	if s.Balance() != BalanceLeastConn || s.Weight("canary") != 0 || s.Weight("web") != DefaultWeight || s.MaxConn() != 500 {
		t.Errorf("balance %q, weights %d %d, maxconn %d", s.Balance(), s.Weight("canary"), s.Weight("web"), s.MaxConn())
	}
	if errs := Validate(s); errs != nil {
		t.Errorf("valid labels refused: %v", errs)
	}
}

func TestConfigDataRules(t *testing.T) {
	cm := func(f func(c *ConfigMap)) Object { c := baseConfigMap(); f(c); return c }
	refs := func(f func(c *Container)) Object { return appWith(func(a *Application) { f(container(a)) }) }
	const c0 = "spec.template.spec.containers[0]"
	item := ConfigMapItem{Type: InjectEnv, DataKey: "k", KeyOrPath: "K"}
	runRules(t, []ruleCase{
		{"cm key", cm(func(c *ConfigMap) { c.Datas["a/b"] = ConfigMapData{Type: "file"} }), `datas["a/b"]`, "key must be"},
		{"cm type", cm(func(c *ConfigMap) { c.Datas["x"] = ConfigMapData{Type: "s3"} }), "datas.x.type", `"file", "http"`},
		{"cm base64", cm(func(c *ConfigMap) { c.Datas["x"] = ConfigMapData{Type: "file", Content: "%%%"} }), "datas.x.content", "base64"},
		{"cm url", cm(func(c *ConfigMap) { c.Datas["x"] = ConfigMapData{Type: "http", Content: "https://h/x"} }), "datas.x.content", "http:// URL"},
		{"secret base64", func() Object { s := baseSecret(); s.Datas["abc"] = SecretData{Content: "!"}; return s }(), "datas.abc.content", "base64"},
		{"secret key", func() Object { s := baseSecret(); s.Datas["a b"] = SecretData{}; return s }(), `datas["a b"]`, "key must be"},
		{"cm ref name", refs(func(c *Container) { c.ConfigMaps = []ConfigMapRef{{Name: "a.b", Items: []ConfigMapItem{item}}} }), c0 + ".configmaps[0].name", "no '.'"},
		{"cm ref items", refs(func(c *Container) { c.ConfigMaps = []ConfigMapRef{{Name: "cfg"}} }), c0 + ".configmaps[0].items", "at least one"},
		{"item type", refs(func(c *Container) {
			c.ConfigMaps = []ConfigMapRef{{Name: "cfg", Items: []ConfigMapItem{{Type: "volume", DataKey: "k", KeyOrPath: "/x"}}}}
		}), c0 + ".configmaps[0].items[0].type", `"env", "file"`},
		{"item dataKey", refs(func(c *Container) {
			c.ConfigMaps = []ConfigMapRef{{Name: "cfg", Items: []ConfigMapItem{{Type: "env", KeyOrPath: "K"}}}}
		}), c0 + ".configmaps[0].items[0].dataKey", "required"},
		{"item keyOrPath", refs(func(c *Container) {
			c.Secrets = []SecretRef{{SecretName: "s", Items: []SecretItem{{Type: "env", DataKey: "k"}}}}
		}), c0 + ".secrets[0].items[0].keyOrPath", "required"},
		{"item env name", refs(func(c *Container) {
			c.Secrets = []SecretRef{{SecretName: "s", Items: []SecretItem{{Type: "env", DataKey: "k", KeyOrPath: "A=B"}}}}
		}), c0 + ".secrets[0].items[0].keyOrPath", "environment variable"},
		{"item file path", refs(func(c *Container) {
			c.Secrets = []SecretRef{{SecretName: "s", Items: []SecretItem{{Type: "file", DataKey: "k", KeyOrPath: "rel/x"}}}}
		}), c0 + ".secrets[0].items[0].keyOrPath", "absolute file path"},
		{"secret ref name", refs(func(c *Container) {
			c.Secrets = []SecretRef{{Items: []SecretItem{{Type: "env", DataKey: "k", KeyOrPath: "K"}}}}
		}), c0 + ".secrets[0].secretName", "required"},
		{"secret ref items", refs(func(c *Container) { c.Secrets = []SecretRef{{SecretName: "s"}} }), c0 + ".secrets[0].items", "at least one"},
	})
}

// A container's memory limit below Docker's minimum (6 MiB; Docker refuses it when the
// container starts) is refused at admission, naming the field and the minimum, wherever
// the container is; processes (berth's cgroups) and no limit at all are not concerned.
func TestDockerMemoryMinimum(t *testing.T) {
	limits := func(mem Quantity) *Resources { return &Resources{Limits: &ResourceList{CPU: "0.1", Memory: mem}} }
	app := func(mem Quantity) Object {
		return appWith(func(a *Application) { container(a).Resources = limits(mem) })
	}
	const c0 = "spec.template.spec.containers[0].resources.limits.memory"
	for _, tc := range []struct {
		name string
		obj  Object
		bad  string // the field refused; "" when accepted
	}{
		{"2 MiB", app("2"), c0},
		{"just below", app("5.99"), c0},
		{"the old 4 MiB floor", app("4"), c0},
		{"the minimum", app("6"), ""},
		{"16 MiB", app("16"), ""},
		{"spaces around", app(" 5 "), c0},
		{"0 is no limit", app("0"), ""},
		{"none", app(""), ""},
		{"the second container", appWith(func(a *Application) {
			c := *container(a)
			c.Name, c.Ports, c.Resources = "side", nil, limits("1")
			a.Spec.Template.Spec.Containers = append(a.Spec.Template.Spec.Containers, c)
		}), "spec.template.spec.containers[1].resources.limits.memory"},
		{"a deployment's template", func() Object {
			d := baseDeploy()
			d.Spec.Template.Spec.Containers[0].Resources = limits("3")
			return d
		}(), c0},
		{"a process is not concerned", procWith(func(p *Process) { proc(p).Resources = limits("2") }), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(tc.obj)
			var got []FieldError
			for _, e := range errs {
				if strings.HasSuffix(e.Field, ".memory") {
					got = append(got, e)
				}
			}
			switch {
			case tc.bad == "" && len(got) > 0:
				t.Fatalf("refused: %v", got)
			case tc.bad != "" && (len(got) != 1 || got[0].Field != tc.bad ||
				!strings.Contains(got[0].Message, "must be at least 6 MiB (Docker's minimum")):
				t.Fatalf("want %s: must be at least 6 MiB (Docker's minimum ..., got %v", tc.bad, errs)
			}
		})
	}
}
