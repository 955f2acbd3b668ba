package stepio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// ErrNoGit is returned for a git input on a node without the git binary.
var ErrNoGit = errors.New("the git binary is not installed on this node (a git input needs it)")

// maxGitStderr bounds what of git's error output an error repeats.
const maxGitStderr = 2048

// CloneGit clones g into dir (created; it must not exist), at g.Revision (a branch, tag
// or commit; "" the remote's HEAD), shallow when g.Depth > 0, within the policy's
// timeout. It runs the node's git with a clean environment (no system or user config,
// no prompts, only the allowed transports); https and http go through a loopback proxy
// that applies the policy to every connection, git:// and ssh (off unless allowed) have
// their host's addresses checked before git starts.
func (p *Policy) CloneGit(ctx context.Context, g *v4.WfGitArtifact, dir string) error {
	u, err := url.Parse(g.Repo)
	if err != nil || u.Host == "" || strings.HasPrefix(u.Host, "-") {
		return fmt.Errorf("repo %q: not a URL with a host", g.Repo)
	}
	allowed := append([]string{"https"}, p.GitProtocols...)
	if !slices.Contains(allowed, u.Scheme) {
		return fmt.Errorf("repo %s: the %s transport is not allowed on this node (allowed: %s; the agent's -step-git-protocols)",
			redactURL(u), u.Scheme, strings.Join(allowed, ", "))
	}
	if strings.HasPrefix(g.Revision, "-") {
		return fmt.Errorf("revision %q: not a revision", g.Revision)
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return ErrNoGit
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout())
	defer cancel()
	home, err := os.MkdirTemp("", "berth-git-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	cfg := []string{"-c", "protocol.file.allow=never", "-c", "protocol.ext.allow=never", "-c", "advice.detachedHead=false",
		"-c", "core.hooksPath=/dev/null", "-c", "submodule.recurse=false"}
	secret := ""
	switch u.Scheme {
	case "https", "http":
		fp, err := p.startProxy(ctx)
		if err != nil {
			return fmt.Errorf("git proxy: %w", err)
		}
		defer fp.close()
		secret = fp.user
		cfg = append(cfg, "-c", "http.proxy="+fp.url(), "-c", "http.proxyAuthMethod=basic")
	default:
		if err := p.checkHost(ctx, u.Hostname()); err != nil {
			return err
		}
	}
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, gitBin, append(slices.Clone(cfg), args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_TERMINAL_PROMPT=0", "GIT_ALLOW_PROTOCOL=" + strings.Join(allowed, ":"),
			"GIT_SSH_COMMAND=ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=/dev/null"}
		sub := args[0]
		if sub == "-C" && len(args) > 2 {
			sub = args[2]
		}
		var stderr bytes.Buffer
		cmd.Stderr = &limitedBuffer{buf: &stderr, max: maxGitStderr}
		if err := cmd.Run(); err != nil {
			msg := strings.TrimSpace(stderr.String())
			if secret != "" {
				msg = strings.ReplaceAll(msg, secret, "***")
			}
			if ctx.Err() != nil {
				return fmt.Errorf("git %s: %w", sub, ctx.Err())
			}
			return fmt.Errorf("git %s: %v: %s", sub, err, msg)
		}
		return nil
	}
	if err := run("init", "-q", "--", dir); err != nil {
		return err
	}
	rev := g.Revision
	if rev == "" {
		rev = "HEAD"
	}
	fetch := []string{"-C", dir, "fetch", "-q", "--no-tags", "--no-recurse-submodules"}
	if g.Depth > 0 {
		fetch = append(fetch, "--depth", strconv.Itoa(g.Depth))
	}
	if err := run(append(fetch, "--", u.String(), rev)...); err != nil {
		return fmt.Errorf("repo %s at %s: %w", redactURL(u), rev, err)
	}
	return run("-C", dir, "checkout", "-q", "FETCH_HEAD")
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(b []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(b[:min(room, len(b))])
	}
	return len(b), nil
}
