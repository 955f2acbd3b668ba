package docker

import (
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/logfile"
)

// A container whose spec sets no log options gets the agent's limits when the daemon's
// log driver keeps files; a spec's own log-driver or log-opt is left as it is.
func TestApplyLogLimits(t *testing.T) {
	lim := logfile.Limits{MaxBytes: 10 << 20, MaxFiles: 5}
	bounded := map[string]string{"max-size": "10485760", "max-file": "5"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name   string
		params []v4.Parameter
		daemon string
		lim    logfile.Limits
		want   container.LogConfig
	}{
		{"json-file", nil, "json-file", lim, container.LogConfig{Config: bounded}},
		{"local", []v4.Parameter{{Key: "user", Value: "nobody"}}, "local", lim, container.LogConfig{Config: bounded}},
		{"a daemon logging elsewhere", nil, "journald", lim, container.LogConfig{}},
		{"a daemon that did not say", nil, "", lim, container.LogConfig{}},
		{"no limits", nil, "json-file", logfile.Limits{}, container.LogConfig{}},
		{"the spec's log-opt", []v4.Parameter{{Key: "log-opt", Value: "max-size=1g"}}, "json-file", lim,
			container.LogConfig{Config: map[string]string{"max-size": "1g"}}},
		{"the spec's log-driver", []v4.Parameter{{Key: "--log-driver", Value: "json-file"}}, "json-file", lim,
			container.LogConfig{Type: "json-file"}},
	} {
		hc := &container.HostConfig{}
		if _, err := applyParameters(c.params, nil, &container.Config{}, hc, log); err != nil {
			t.Fatal(err)
		}
		applyLogLimits(hc, c.daemon, c.lim)
		if hc.LogConfig.Type != c.want.Type || !maps.Equal(hc.LogConfig.Config, c.want.Config) {
			t.Errorf("%s: log config %+v, want %+v", c.name, hc.LogConfig, c.want)
		}
	}
}

// The daemon takes the limits: its default json-file driver gets them, in bytes.
func TestLogLimitsReachTheContainer(t *testing.T) {
	d := parallelDriver(t)
	d.logLimits = logfile.Limits{MaxBytes: 1 << 20, MaxFiles: 3}
	if drv := d.daemonLogDriver(ctxT(t, 10*time.Second)); drv != "json-file" && drv != "local" {
		t.Skipf("the daemon logs with %q", drv)
	}
	task := newTask(t, d, "logs", imgPlain, "/bin/sleep", "30")
	mustStart(t, d, task)
	lc := rawInspect(t, task.ID).HostConfig.LogConfig
	if lc.Config["max-size"] != "1048576" || lc.Config["max-file"] != "3" {
		t.Errorf("log config %+v", lc)
	}
}
