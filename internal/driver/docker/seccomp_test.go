package docker

import (
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
)

// A seccomp profile reaches dockerd as the content of the node's profile of that name;
// the runtime's default is no option at all; other security options pass as they are;
// an inline profile, a path or a name the node does not list fails the start.
func TestSeccompProfiles(t *testing.T) {
	const strict = `{"defaultAction":"SCMP_ACT_ERRNO"}`
	profiles := map[string]string{"strict": strict}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		value string
		want  []string // the SecurityOpt given to dockerd
		err   string
	}{
		{"seccomp=strict", []string{"seccomp=" + strict}, ""},
		{"seccomp:strict", []string{"seccomp=" + strict}, ""},
		{" seccomp=strict ", []string{"seccomp=" + strict}, ""},
		{"seccomp=builtin", nil, ""},
		{"seccomp=default", nil, ""},
		{"seccomp=unconfined", []string{"seccomp=unconfined"}, ""},
		{"no-new-privileges", []string{"no-new-privileges"}, ""},
		{"apparmor=docker-default", []string{"apparmor=docker-default"}, ""},
		{"seccomp=other", nil, `seccomp profile "other" is not among this node's profiles`},
		{`seccomp={"defaultAction":"SCMP_ACT_ALLOW"}`, nil, "named, not given inline or as a path"},
		{"seccomp=/etc/permissive.json", nil, "named, not given inline or as a path"},
	} {
		hc := &container.HostConfig{}
		_, err := applyParameters([]v4.Parameter{{Key: "security-opt", Value: c.value}}, profiles, &container.Config{}, hc, log)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "security-opt") {
				t.Errorf("%s: %v, want %q", c.value, err, c.err)
			}
			continue
		}
		if err != nil || !slices.Equal(hc.SecurityOpt, c.want) {
			t.Errorf("%s: %q %v, want %q", c.value, hc.SecurityOpt, err, c.want)
		}
	}
}

// Every parameter the driver applies is judged by the privilege table, so that a key
// added here is not run for a tenant before someone decided what it needs.
func TestParamsCoverTheDriver(t *testing.T) {
	for key := range paramTable {
		if !acl.KnownParam(key) {
			t.Errorf("docker parameter %q is not in internal/acl's table (params.go)", key)
		}
	}
}
