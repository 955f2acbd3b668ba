package executor

import (
	"encoding/base64"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestCopyVars(t *testing.T) {
	tests := []struct {
		name    string
		in, out []string
	}{
		{"copies a whole reference", []string{"HOST=1.2.3.4", "CONTAINERIP=$HOST"}, []string{"HOST=1.2.3.4", "CONTAINERIP=1.2.3.4"}},
		{"reference to a later entry", []string{"A=$B", "B=b"}, []string{"A=b", "B=b"}},
		{"no nesting", []string{"X=x", "HOST=$X", "IP=$HOST"}, []string{"X=x", "HOST=x", "IP=$X"}},
		{"no partial strings", []string{"A=a", "B=$A/x", "C=pre$A"}, []string{"A=a", "B=$A/x", "C=pre$A"}},
		{"unknown name stays", []string{"A=$NOPE"}, []string{"A=$NOPE"}},
		{"self reference stays", []string{"A=$A"}, []string{"A=$A"}},
		{"last duplicate wins", []string{"A=1", "A=2", "B=$A"}, []string{"A=1", "A=2", "B=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var env []envVar
			for _, kv := range tt.in {
				n, v, _ := strings.Cut(kv, "=")
				env = append(env, envVar{n, v})
			}
			if got := formatEnv(copyVars(env)); !slices.Equal(got, tt.out) {
				t.Errorf("got %v, want %v", got, tt.out)
			}
		})
	}
}

func TestResourceValue(t *testing.T) {
	res := &v4.Resources{
		Requests: &v4.ResourceList{CPU: "0.5", Memory: "256"},
		Limits:   &v4.ResourceList{CPU: "2", Memory: "-1"},
	}
	tests := []struct {
		ref, want string
		ok        bool
	}{
		{"requests.cpu", "500.000000", true},
		{"limits.cpu", "2000.000000", true},
		{"requests.memory", "256", true},
		{"limits.memory", "0", true},
		{"limits.storage", "", false},
		{"cpu", "", false},
	}
	for _, tt := range tests {
		got, ok, err := resourceValue(res, tt.ref)
		if err != nil || got != tt.want || ok != tt.ok {
			t.Errorf("%s = %q %v %v, want %q %v", tt.ref, got, ok, err, tt.want, tt.ok)
		}
	}
	if v, ok, _ := resourceValue(nil, "requests.cpu"); !ok || v != "0.000000" {
		t.Errorf("no resources: %q %v", v, ok)
	}
	drop, err := specEnv([]v4.EnvVar{{Name: "X", ValueFrom: &v4.EnvVarSource{ResourceFieldRef: &v4.ResourceFieldRef{Resource: "limits.gpu"}}}}, res, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || len(drop) != 0 {
		t.Errorf("unknown resource: %v %v, want the variable dropped", drop, err)
	}
}

// TestProcessTaskReachesDriver checks everything the executor puts into a process task:
// rendered variables, env in order with the $VAR copy, configmap and secret items, limits.
func TestProcessTaskReachesDriver(t *testing.T) {
	h := newHarness(t)
	h.data.configs[testNS+"/cfg"] = &v4.ConfigMap{Datas: map[string]v4.ConfigMapData{
		"level": {Type: "file", Content: b64("debug")},
		"conf":  {Type: "file", Content: b64("a = 1\n")},
	}}
	h.data.secrets[testNS+"/sec"] = &v4.Secret{Datas: map[string]v4.SecretData{
		"pw": {Content: b64("hunter2")},
	}}
	proc := v4.ProcessTask{
		ProcName: "gamesvr",
		WorkPath: "${work_base_dir}/${namespace}.${processname}.${instanceid}",
		PidFile:  "${run_base_dir}/gamesvr.pid",
		StartCmd: "./start.sh --address ${hostip} --port ${ports.http} --pid ${pidFile}",
		Ports:    []v4.Port{{Name: "http", HostPort: 31001}, {Name: "metric"}},
		Resources: &v4.Resources{
			Requests: &v4.ResourceList{CPU: "0.5", Memory: "256"},
			Limits:   &v4.ResourceList{CPU: "2", Memory: "512"},
		},
		Env: []v4.EnvVar{
			{Name: "http_port", Value: "${ports.http}"},
			{Name: "work", Value: "${workPath}"},
			{Name: "CONTAINERIP", Value: "$HOST"},
			{Name: "RANDOMID", Value: "$BCS_POD_ID"},
			{Name: "NESTED", Value: "$CONTAINERIP"},
			{Name: "CPU", ValueFrom: &v4.EnvVarSource{ResourceFieldRef: &v4.ResourceFieldRef{Resource: "requests.cpu"}}},
			{Name: "MEM", ValueFrom: &v4.EnvVarSource{ResourceFieldRef: &v4.ResourceFieldRef{Resource: "limits.memory"}}},
			{Name: "FROM_SECRET", Value: "$PASSWORD"},
		},
		ConfigMaps: []v4.ConfigMapRef{{Name: "cfg", Items: []v4.ConfigMapItem{
			{Type: "env", DataKey: "level", KeyOrPath: "LOG_LEVEL"},
			{Type: "file", DataKey: "conf", KeyOrPath: "/etc/app.conf", ReadOnly: true, User: "app"},
		}}},
		Secrets: []v4.SecretRef{{SecretName: "sec", Items: []v4.SecretItem{
			{Type: "env", DataKey: "pw", KeyOrPath: "PASSWORD"},
			{Type: "file", DataKey: "pw", KeyOrPath: "/etc/pw", User: "root", ReadOnly: true},
		}}},
	}
	tg := processTG("p", proc)
	tg.Spec.Ports = []v4.AllocatedPort{{Name: "http", HostPort: 31001}, {Name: "metric", HostPort: 31777}}
	h.run(tg)
	st := h.rec.waitPhase(t, "p", v4.StatusRunning)

	tk, ok := h.proc.Task(id("p", "gamesvr"))
	if !ok {
		t.Fatal("task not started")
	}
	dir := PodDir(h.dir, testNS, "p")
	workPath := dir + "/work/ns-a.gamesvc.2"
	wantEnv := []string{
		"PORT_http=31001", "PORT_metric=31777",
		"BCS_NODE_IP=" + testHostIP, "BCS_POD_ID=p", "BCS_CONTAINER_IP=" + testHostIP, "HOST=" + testHostIP, "BERTH_NODE_NAME=" + testNode,
		"http_port=31001", "work=" + workPath,
		"CONTAINERIP=" + testHostIP, "RANDOMID=p", "NESTED=$HOST",
		"CPU=500.000000", "MEM=512", "FROM_SECRET=hunter2",
		"LOG_LEVEL=debug", "PASSWORD=hunter2",
	}
	if !slices.Equal(tk.Env, wantEnv) {
		t.Errorf("env:\n got %q\nwant %q", tk.Env, wantEnv)
	}
	if tk.Process.WorkPath != workPath || tk.Process.PidFile != dir+"/run/gamesvr.pid" {
		t.Errorf("rendered paths = %q %q", tk.Process.WorkPath, tk.Process.PidFile)
	}
	if want := "./start.sh --address " + testHostIP + " --port 31001 --pid " + dir + "/run/gamesvr.pid"; tk.Process.StartCmd != want {
		t.Errorf("startCmd = %q, want %q", tk.Process.StartCmd, want)
	}
	wantFiles := []driver.File{
		{Path: "/etc/app.conf", Content: []byte("a = 1\n"), ReadOnly: true, User: "app"},
		{Path: "/etc/pw", Content: []byte("hunter2"), ReadOnly: true, User: "root"},
	}
	if len(tk.Files) != len(wantFiles) {
		t.Fatalf("files = %+v", tk.Files)
	}
	for i, f := range tk.Files {
		w := wantFiles[i]
		if f.Path != w.Path || string(f.Content) != string(w.Content) || f.ReadOnly != w.ReadOnly || f.User != w.User {
			t.Errorf("file %d = %+v, want %+v", i, f, w)
		}
	}
	if tk.CPULimit != 2 || tk.MemoryLimit != 512 || tk.KillGrace.Seconds() != 5 {
		t.Errorf("limits = %v %v, grace %v", tk.CPULimit, tk.MemoryLimit, tk.KillGrace)
	}
	if len(tk.Ports) != 2 || tk.Ports[1].HostPort != 31777 {
		t.Errorf("ports = %+v", tk.Ports)
	}
	if info := st.Tasks[0].Info; info.Hostname != testNode || info.IPAddress != testHostIP {
		t.Errorf("process info = %+v", info)
	}
}

func TestUnlimitedResources(t *testing.T) {
	h := newHarness(t)
	tg := processTG("p", v4.ProcessTask{ProcName: "svc", StartCmd: "./svc",
		Resources: &v4.Resources{Limits: &v4.ResourceList{CPU: "-1", Memory: "-1"}}})
	h.run(tg)
	h.rec.waitPhase(t, "p", v4.StatusRunning)
	tk, _ := h.proc.Task(id("p", "svc"))
	if tk.CPULimit != 0 || tk.MemoryLimit != 0 {
		t.Errorf("limits = %v %v, want unlimited", tk.CPULimit, tk.MemoryLimit)
	}
}

func TestMissingDataFailsGroup(t *testing.T) {
	tests := []struct {
		name string
		cms  []v4.ConfigMapRef
		secs []v4.SecretRef
		msg  string
	}{
		{"missing configmap", []v4.ConfigMapRef{{Name: "gone", Items: []v4.ConfigMapItem{{Type: "env", DataKey: "k", KeyOrPath: "K"}}}}, nil,
			`task a: configmap "gone": configmap ns-a/gone not found`},
		{"missing configmap key", []v4.ConfigMapRef{{Name: "cfg", Items: []v4.ConfigMapItem{{Type: "file", DataKey: "nope", KeyOrPath: "/x"}}}}, nil,
			`task a: configmap "cfg" has no data key "nope"`},
		{"missing secret", nil, []v4.SecretRef{{SecretName: "gone", Items: []v4.SecretItem{{Type: "env", DataKey: "k", KeyOrPath: "K"}}}},
			`task a: secret "gone": secret ns-a/gone not found`},
		{"missing secret key", nil, []v4.SecretRef{{SecretName: "sec", Items: []v4.SecretItem{{Type: "env", DataKey: "nope", KeyOrPath: "K"}}}},
			`task a: secret "sec" has no data key "nope"`},
		{"bad base64", []v4.ConfigMapRef{{Name: "cfg", Items: []v4.ConfigMapItem{{Type: "env", DataKey: "bad", KeyOrPath: "K"}}}}, nil,
			`task a: configmap "cfg" key "bad": content is not base64: illegal base64 data at input byte 2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.data.configs[testNS+"/cfg"] = &v4.ConfigMap{Datas: map[string]v4.ConfigMapData{"k": {Type: "file", Content: b64("v")}, "bad": {Type: "file", Content: "no!"}}}
			h.data.secrets[testNS+"/sec"] = &v4.Secret{Datas: map[string]v4.SecretData{"k": {Content: b64("v")}}}
			tg := containerTG("web", "a", "b")
			tg.Spec.Template.Spec.Containers[0].ConfigMaps = tt.cms
			tg.Spec.Template.Spec.Containers[0].Secrets = tt.secs
			h.run(tg)
			st := h.rec.waitPhase(t, "web", v4.StatusFailed)
			if st.Message != tt.msg {
				t.Errorf("message = %q, want %q", st.Message, tt.msg)
			}
			if len(h.docker.Started()) != 0 {
				t.Error("a task started")
			}
		})
	}
}
