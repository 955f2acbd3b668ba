package executor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
)

const pullPW = "s3cr3t-PW"

func pullSecret(name, config string) *v4.Secret {
	return &v4.Secret{Metadata: v4.ObjectMeta{Namespace: testNS, Name: name}, Type: v4.SecretTypeDockerConfigJSON,
		Datas: map[string]v4.SecretData{v4.DockerConfigJSONKey: {Content: base64.StdEncoding.EncodeToString([]byte(config))}}}
}

// The credentials of a pull: the container's own first, then the first pull secret with
// an entry for the image's registry, else none; a secret that is missing or holds no
// docker config fails, naming it and never a credential.
func TestPullAuth(t *testing.T) {
	data := &memData{secrets: map[string]*v4.Secret{
		testNS + "/hub": pullSecret("hub", `{"auths":{"https://index.docker.io/v1/":{"username":"hubby","password":"`+pullPW+`"}}}`),
		testNS + "/reg": pullSecret("reg", `{"auths":{"https://r.local:5000":{"auth":"`+
			base64.StdEncoding.EncodeToString([]byte("ann:"+pullPW))+`"}}}`),
		testNS + "/plain": {Metadata: v4.ObjectMeta{Name: "plain"}, Datas: map[string]v4.SecretData{"k": {Content: "eA=="}}},
		testNS + "/bad":   pullSecret("bad", `{"auths":{"r.local:5000":{"password":"`+pullPW+`"}}}`),
	}}
	refs := func(names ...string) []v4.LocalObjectReference {
		var out []v4.LocalObjectReference
		for _, n := range names {
			out = append(out, v4.LocalObjectReference{Name: n})
		}
		return out
	}
	for _, tt := range []struct {
		name string
		c    v4.Container
		want string // user@server, "<none>" for an anonymous pull
		err  string
	}{
		{"hub image", v4.Container{Image: "library/busybox:1", ImagePullSecrets: refs("reg", "hub")}, "hubby@docker.io", ""},
		{"registry image", v4.Container{Image: "R.local:5000/app:1", ImagePullSecrets: refs("hub", "reg")}, "ann@r.local:5000", ""},
		{"no entry", v4.Container{Image: "other.local/app", ImagePullSecrets: refs("hub", "reg")}, "<none>", ""},
		{"spec credentials first", v4.Container{Image: "r.local:5000/app", ImagePullUser: "bob", ImagePullPasswd: "x", ImagePullSecrets: refs("reg")}, "bob@r.local:5000", ""},
		{"missing secret", v4.Container{Image: "r.local:5000/app", ImagePullSecrets: refs("nope")}, "", `imagePullSecrets[0]: secret "nope"`},
		{"not a docker config", v4.Container{Image: "r.local:5000/app", ImagePullSecrets: refs("hub", "plain")}, "", `imagePullSecrets[1]: secret "plain": not a docker config secret`},
		{"bad config", v4.Container{Image: "r.local:5000/app", ImagePullSecrets: refs("bad")}, "", `secret "bad": auths["r.local:5000"]: username (or auth) is required`},
	} {
		r := newDataResolver(data, testNS, "tg")
		auth, err := r.pullAuth(context.Background(), &tt.c)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) || strings.Contains(err.Error(), pullPW) {
				t.Errorf("%s: error %v, want ...%s... without the password", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil || auth.String() != tt.want {
			t.Errorf("%s: %v %v, want %s", tt.name, auth, err, tt.want)
		}
		if auth != nil && tt.c.ImagePullUser == "" && auth.Password != pullPW {
			t.Errorf("%s: the password is not the secret's", tt.name)
		}
	}
}

// eventLog collects the executor's events.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) record(ns, name, typ, reason, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, typ+" "+reason+" "+msg)
}

func (l *eventLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// A pull's progress is the task's message (at most every pullMessageEvery) and a few
// events: Pulling when it begins and at most every pullEventEvery, maxPullEvents in all,
// then Pulled with the size and time.
func TestPullReport(t *testing.T) {
	var log eventLog
	h := newHarness(t, func(c *Config) { c.Event = log.record })
	p := h.e.newPod(containerTG("pull", "web"))
	clock := time.Unix(1e9, 0)
	r := &pullReport{p: p, i: 0, now: func() time.Time { return clock }}
	const img = "r.local:5000/app:1"
	message := func() string { return p.snapshot().Tasks[0].Message }
	r.on(driver.PullEvent{Phase: driver.PullStarted, Image: img})
	if m := message(); m != "pulling image "+img {
		t.Errorf("message at the start %q", m)
	}
	reports := len(h.rec.all("pull"))
	const steps = 200 // 100 s, a step every 500 ms
	for i := range steps {
		clock = clock.Add(500 * time.Millisecond)
		r.on(driver.PullEvent{Phase: driver.PullProgress, Image: img, Current: int64(i) * (27 << 20) / steps, Total: 27 << 20, Layers: 3, Done: i * 3 / steps})
		if i == 90 { // set at i = 89, a second after the last
			if m := message(); m != "pulling image "+img+": 44% (12.0 MiB/27.0 MiB, 1/3 layers)" {
				t.Errorf("message at 44%%: %q", m)
			}
		}
	}
	if n := len(h.rec.all("pull")) - reports; n != steps/2 {
		t.Errorf("%d status reports over 100 s of progress, want one a second (%d)", n, steps/2)
	}
	r.on(driver.PullEvent{Phase: driver.PullDone, Image: img, Size: 27 << 20, Took: 100 * time.Second})
	if m := message(); m != "" {
		t.Errorf("message after the pull %q", m)
	}
	events := log.all()
	if len(events) != maxPullEvents+1 {
		t.Fatalf("%d events, want %d Pulling and one Pulled: %q", len(events), maxPullEvents, events)
	}
	if events[0] != "Normal Pulling task web: pulling image "+img || !strings.HasPrefix(events[1], "Normal Pulling task web: pulling image "+img+": 4% (") {
		t.Errorf("first events %q", events[:2])
	}
	if last := events[len(events)-1]; last != "Normal Pulled task web: pulled image "+img+" (27.0 MiB) in 1m40s" {
		t.Errorf("last event %q", last)
	}
}

// The executor resolves the pull credentials into the driver's task; a failed pull is a
// PullFailed Warning event and the pod's message, the registry's answer in both.
func TestPullThroughTheExecutor(t *testing.T) {
	var log eventLog
	h := newHarness(t, func(c *Config) { c.Event = log.record })
	h.data.secrets[testNS+"/reg"] = pullSecret("reg", `{"auths":{"r.local:5000":{"username":"ann","password":"`+pullPW+`"}}}`)
	var got *driver.RegistryAuth
	var mu sync.Mutex
	h.docker.SetStartHook(func(_ context.Context, tk *driver.Task) error {
		mu.Lock()
		defer mu.Unlock()
		got = tk.Setup.PullAuth
		return nil
	})
	tg := containerTG("ok", "web")
	tg.Spec.Template.Spec.Containers[0].Image = "r.local:5000/app:1"
	tg.Spec.Template.Spec.Containers[0].ImagePullSecrets = []v4.LocalObjectReference{{Name: "reg"}}
	h.run(tg)
	h.rec.waitPhase(t, "ok", v4.StatusRunning)
	mu.Lock()
	if got == nil || got.Server != "r.local:5000" || got.Username != "ann" || got.Password != pullPW {
		t.Errorf("the driver got %v", got)
	}
	mu.Unlock()

	refused := fmt.Errorf("pull image r.local:5000/app:1: %w", errors.New("unauthorized: authentication required"))
	h.docker.FailNextStart("web", fmt.Errorf("start task %s: %w", id("bad", "web"), driver.PullFailed(refused)))
	tg = containerTG("bad", "web")
	tg.Spec.Template.Spec.Containers[0].ImagePullSecrets = []v4.LocalObjectReference{{Name: "reg"}}
	h.run(tg)
	st := h.rec.waitPhase(t, "bad", v4.StatusFailed)
	if !strings.Contains(st.Message, "pull image r.local:5000/app:1: unauthorized: authentication required") {
		t.Errorf("message %q", st.Message)
	}
	events := log.all()
	if len(events) != 1 || events[0] != "Warning PullFailed task web: pull image r.local:5000/app:1: unauthorized: authentication required" {
		t.Errorf("events %q", events)
	}
}
