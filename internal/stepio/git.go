package stepio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
// that applies the policy to every connection and bounds what is downloaded
// (MaxFetchBytes), git:// and ssh (off unless allowed) have their host's addresses
// checked before git starts. The fetched tree is checked against lim (its files' sizes
// and count) before it is checked out: the node's disk is no namespace's to fill.
func (p *Policy) CloneGit(ctx context.Context, g *v4.WfGitArtifact, dir string, lim Limits) error {
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
	gr := &gitRun{ctx: ctx, bin: gitBin, home: home, allowed: allowed,
		cfg: []string{"-c", "protocol.file.allow=never", "-c", "protocol.ext.allow=never", "-c", "advice.detachedHead=false",
			"-c", "core.hooksPath=/dev/null", "-c", "submodule.recurse=false"}}
	var fp *fetchProxy
	switch u.Scheme {
	case "https", "http":
		if fp, err = p.startProxy(ctx, p.maxFetch()); err != nil {
			return fmt.Errorf("git proxy: %w", err)
		}
		defer fp.close()
		gr.secret = fp.user
		gr.cfg = append(gr.cfg, "-c", "http.proxy="+fp.url(), "-c", "http.proxyAuthMethod=basic")
	default:
		if err := p.checkHost(ctx, u.Hostname()); err != nil {
			return err
		}
	}
	if err := gr.run("init", "-q", "--", dir); err != nil {
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
	if err := gr.run(append(fetch, "--", u.String(), rev)...); err != nil {
		if fp != nil && fp.over.Load() {
			return fmt.Errorf("repo %s at %s: more than %d bytes fetched (the agent's bound on a git input)", redactURL(u), rev, p.maxFetch())
		}
		return fmt.Errorf("repo %s at %s: %w", redactURL(u), rev, err)
	}
	if err := gr.treeWithin(dir, lim); err != nil {
		return fmt.Errorf("repo %s at %s: %w", redactURL(u), rev, err)
	}
	return gr.run("-C", dir, "checkout", "-q", "FETCH_HEAD")
}

func (p *Policy) maxFetch() int64 {
	if p.MaxFetchBytes > 0 {
		return p.MaxFetchBytes
	}
	return DefaultLimits.Bytes
}

// gitRun runs git commands of one clone.
type gitRun struct {
	ctx     context.Context
	bin     string
	home    string
	allowed []string
	cfg     []string
	secret  string // the proxy's credential, hidden from errors
}

func (g *gitRun) command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, g.bin, append(slices.Clone(g.cfg), args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + g.home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0", "GIT_ALLOW_PROTOCOL=" + strings.Join(g.allowed, ":"),
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=/dev/null"}
	return cmd
}

// run runs git with args; its error repeats git's (bounded) error output.
func (g *gitRun) run(args ...string) error {
	cmd := g.command(g.ctx, args...)
	sub := args[0]
	if sub == "-C" && len(args) > 2 {
		sub = args[2]
	}
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: maxGitStderr}
	if err := cmd.Run(); err != nil {
		if g.ctx.Err() != nil {
			return fmt.Errorf("git %s: %w", sub, g.ctx.Err())
		}
		return fmt.Errorf("git %s: %v: %s", sub, err, g.redact(stderr.String()))
	}
	return nil
}

func (g *gitRun) redact(msg string) string {
	msg = strings.TrimSpace(msg)
	if g.secret != "" {
		msg = strings.ReplaceAll(msg, g.secret, "***")
	}
	return msg
}

// treeWithin checks FETCH_HEAD's tree in the clone dir against lim before it is
// checked out: git ls-tree lists its files' sizes without reading them.
func (g *gitRun) treeWithin(dir string, lim Limits) error {
	ctx, cancel := context.WithCancel(g.ctx)
	defer cancel()
	cmd := g.command(ctx, "-C", dir, "ls-tree", "-r", "-l", "-z", "FETCH_HEAD")
	var stderr bytes.Buffer
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: maxGitStderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("git ls-tree: %w", err)
	}
	werr := treeSizes(out, lim)
	if werr != nil {
		cancel() // stop listing a tree already refused
	}
	err = cmd.Wait()
	switch {
	case werr != nil:
		return werr
	case err != nil:
		return fmt.Errorf("git ls-tree: %v: %s", err, g.redact(stderr.String()))
	}
	return nil
}

// treeSizes reads git ls-tree -r -l -z output ("<mode> <type> <object> <size>\t<path>"
// records) and fails past lim's entries or bytes.
func treeSizes(r io.Reader, lim Limits) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, 0); i >= 0 {
			return i + 1, data[:i], nil
		}
		if atEOF && len(data) > 0 {
			return len(data), data, nil
		}
		return 0, nil, nil
	})
	var total int64
	entries := 0
	for sc.Scan() {
		if entries++; entries > lim.Entries {
			return fmt.Errorf("the tree has more than %d entries (the bound on an input)", lim.Entries)
		}
		meta, _, _ := bytes.Cut(sc.Bytes(), []byte("\t"))
		f := strings.Fields(string(meta))
		if len(f) != 4 || f[3] == "-" { // a submodule: not checked out
			continue
		}
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("git ls-tree: unexpected size %q", f[3])
		}
		if total += n; total > lim.Bytes {
			return fmt.Errorf("the tree has more than %d bytes (the bound on an input)", lim.Bytes)
		}
	}
	return sc.Err()
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
