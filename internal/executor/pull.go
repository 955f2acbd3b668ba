package executor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/bytesize"
	"github.com/berthhq/berth/internal/driver"
)

// pullAuth is what container c's image is pulled with (docs/docker.md, "Images and
// registries"): the container's own imagePullUser/imagePullPasswd when it has them (they
// name this image's credentials alone), otherwise the entry for the image's registry
// of the first of its imagePullSecrets that has one; nil (an anonymous pull) when none
// has. A pull secret that is missing or holds no docker config fails the start, as a
// missing secret item does. Errors name secrets and registries, never a credential.
func (r *dataResolver) pullAuth(ctx context.Context, c *v4.Container) (*driver.RegistryAuth, error) {
	host := v4.ImageRegistry(c.Image)
	if c.ImagePullUser != "" || c.ImagePullPasswd != "" {
		return &driver.RegistryAuth{Server: host, Username: c.ImagePullUser, Password: c.ImagePullPasswd}, nil
	}
	for i, ref := range c.ImagePullSecrets {
		s, err := r.secret(ctx, ref.Name)
		if err != nil {
			return nil, fmt.Errorf("imagePullSecrets[%d]: %w", i, err)
		}
		cfg, err := dockerConfig(s)
		if err != nil {
			return nil, fmt.Errorf("imagePullSecrets[%d]: secret %q: %w", i, ref.Name, err)
		}
		if creds, ok := cfg.Lookup(host); ok {
			return &driver.RegistryAuth{Server: host, Username: creds.Username, Password: creds.Password}, nil
		}
	}
	return nil, nil
}

// dockerConfig parses a pull secret's docker config (its key DockerConfigJSONKey).
func dockerConfig(s *v4.Secret) (*v4.DockerConfig, error) {
	d, ok := s.Datas[v4.DockerConfigJSONKey]
	if !ok {
		return nil, fmt.Errorf("not a docker config secret: it has no key %q (type %s)", v4.DockerConfigJSONKey, v4.SecretTypeDockerConfigJSON)
	}
	b, err := base64.StdEncoding.DecodeString(d.Content)
	if err != nil {
		return nil, errors.New("its docker config is not base64")
	}
	return v4.ParseDockerConfig(b)
}

// How often a pull's progress is told: the task's message at most every
// pullMessageEvery (each is a status report to the servers), a Pulling event at most
// every pullEventEvery and maxPullEvents times a pull (events are kept and listed).
const (
	pullMessageEvery = time.Second
	pullEventEvery   = 5 * time.Second
	maxPullEvents    = 10
)

// pullReport turns the pull events of the pod's task i into the task's message ("pulling
// image x: 45% (12.0/27.0 MiB)", which berth describe shows) and Normal events of the
// task group: Pulling when it begins and now and then, Pulled with its size and time.
type pullReport struct {
	p    *pod
	i    int
	now  func() time.Time
	sent int // Pulling events of this pull
	// lastMessage and lastEvent are when the message and a Pulling event were last set.
	lastMessage, lastEvent time.Time
}

func (p *pod) pullReporter(i int) func(driver.PullEvent) {
	r := &pullReport{p: p, i: i, now: time.Now}
	return r.on
}

func (r *pullReport) on(e driver.PullEvent) {
	task := r.p.plan.tasks[r.i].name
	now := r.now()
	switch e.Phase {
	case driver.PullStarted:
		r.sent, r.lastMessage, r.lastEvent = 1, now, now
		r.setMessage("pulling image " + e.Image)
		r.p.event(v4.EventNormal, "Pulling", fmt.Sprintf("task %s: pulling image %s", task, e.Image))
	case driver.PullProgress:
		text := pullProgressText(e)
		if now.Sub(r.lastMessage) >= pullMessageEvery {
			r.lastMessage = now
			r.setMessage(text)
		}
		if now.Sub(r.lastEvent) >= pullEventEvery && r.sent < maxPullEvents {
			r.sent++
			r.lastEvent = now
			r.p.event(v4.EventNormal, "Pulling", fmt.Sprintf("task %s: %s", task, text))
		}
	case driver.PullDone:
		r.setMessage("")
		r.p.event(v4.EventNormal, "Pulled", fmt.Sprintf("task %s: pulled image %s (%s) in %s",
			task, e.Image, bytesize.Format(e.Size), e.Took.Round(10*time.Millisecond)))
	}
}

func (r *pullReport) setMessage(m string) {
	r.p.update(func(st *v4.TaskGroupStatus) { st.Tasks[r.i].Message = m })
}

// pullProgressText says how far a pull is: "pulling image x: 45% (12.0/27.0 MiB, 1/3
// layers)", or without numbers while no layer size is known.
func pullProgressText(e driver.PullEvent) string {
	if e.Total <= 0 {
		return "pulling image " + e.Image
	}
	pct := min(e.Current*100/e.Total, 100)
	return fmt.Sprintf("pulling image %s: %d%% (%s/%s, %d/%d layers)", e.Image, pct,
		bytesize.Format(e.Current), bytesize.Format(e.Total), e.Done, e.Layers)
}
