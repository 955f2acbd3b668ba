package v4

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
)

// Bounds of an input artifact's raw, http and git sources: the agent fetches them as
// root on a node, so every field is a user's input to bound and check here.
const (
	// MaxWfRawArtifact bounds a raw artifact's data (it lives in the workflow object).
	MaxWfRawArtifact  = 256 << 10
	maxWfHTTPHeaders  = 20
	maxWfHeaderValue  = 4096
	maxWfURLLen       = 4096
	maxWfGitRevision  = 255
	maxWfGitCloneDept = 1 << 20
)

// wfHeaderName is an HTTP header name (RFC 9110 token characters).
var wfHeaderName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$")

// wfGitRevision is a branch, tag or commit: no spaces, no control characters, and no
// leading '-' (it would be read as an option of git).
var wfGitRevision = regexp.MustCompile(`^[A-Za-z0-9_./@^~{}+][A-Za-z0-9_./@^~{}+-]*$`)

// validateWfArtifactSource checks an artifact's raw, http and git sources: at most one
// of them, not with from or a repository, each within its bounds.
func validateWfArtifactSource(p string, a *WfArtifact, errs *FieldErrors) {
	n := 0
	for _, set := range []bool{a.Raw != nil, a.HTTP != nil, a.Git != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return
	case n > 1:
		errs.add(p, "must set at most one of raw, http and git")
		return
	case a.From != "":
		errs.add(p+".from", "must not be set with a raw, http or git source")
	case a.Repository != nil:
		errs.add(p+".repository", "must not be set with a raw, http or git source")
	}
	switch {
	case a.Raw != nil:
		if len(a.Raw.Data) > MaxWfRawArtifact {
			errs.add(p+".raw.data", "must be at most %d bytes, got %d", MaxWfRawArtifact, len(a.Raw.Data))
		}
	case a.HTTP != nil:
		validateWfHTTPArtifact(p+".http", a.HTTP, errs)
	case a.Git != nil:
		validateWfGitArtifact(p+".git", a.Git, errs)
	}
}

func validateWfHTTPArtifact(p string, h *WfHTTPArtifact, errs *FieldErrors) {
	if err := checkWfURL(h.URL, "http", "https"); err != nil {
		errs.add(p+".url", "%v", err)
	}
	if len(h.Headers) > maxWfHTTPHeaders {
		errs.add(p+".headers", "must have at most %d headers, got %d", maxWfHTTPHeaders, len(h.Headers))
		return
	}
	for i, hd := range h.Headers {
		hp := fmt.Sprintf("%s.headers[%d]", p, i)
		if !wfHeaderName.MatchString(hd.Name) {
			errs.add(hp+".name", "must be an HTTP header name, got %q", truncate(hd.Name, 80))
		} else if strings.EqualFold(hd.Name, "Host") {
			errs.add(hp+".name", "Host is taken from the URL")
		}
		if len(hd.Value) > maxWfHeaderValue || !printable.MatchString(hd.Value) {
			errs.add(hp+".value", "must be at most %d characters without control characters", maxWfHeaderValue)
		}
	}
}

func validateWfGitArtifact(p string, g *WfGitArtifact, errs *FieldErrors) {
	// git:// and ssh:// pass admission; the agent refuses them unless its
	// -step-git-protocols allows them (docs/agent.md).
	if err := checkWfURL(g.Repo, "https", "http", "git", "ssh"); err != nil {
		errs.add(p+".repo", "%v", err)
	}
	if g.Revision != "" && (len(g.Revision) > maxWfGitRevision || !wfGitRevision.MatchString(g.Revision) || strings.Contains(g.Revision, "..")) {
		errs.add(p+".revision", "must be a branch, tag or commit of at most %d characters (letters, digits, _./@^~{}+-, not starting with '-', no '..'), got %q",
			maxWfGitRevision, truncate(g.Revision, 80))
	}
	if g.Depth < 0 || g.Depth > maxWfGitCloneDept {
		errs.add(p+".depth", "must be 0 to %d, got %d", maxWfGitCloneDept, g.Depth)
	}
}

// checkWfURL checks an absolute URL of one of schemes, with a host and without user
// information (credentials do not belong in a spec).
func checkWfURL(s string, schemes ...string) error {
	if s == "" {
		return fmt.Errorf("required")
	}
	if len(s) > maxWfURLLen || !printable.MatchString(s) || strings.ContainsAny(s, " \\") {
		return fmt.Errorf("must be a URL of at most %d characters without spaces or control characters", maxWfURLLen)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("must be a URL: %v", err)
	}
	if !slicesContains(schemes, u.Scheme) {
		return fmt.Errorf("scheme must be one of %s, got %q", strings.Join(schemes, ", "), truncate(u.Scheme, 20))
	}
	if u.Host == "" || u.Hostname() == "" || strings.HasPrefix(u.Host, "-") {
		return fmt.Errorf("must name a host, got %q", truncate(s, 80))
	}
	if u.User != nil {
		// ssh://git@host/repo names the remote user; a password never belongs in a spec.
		if _, pw := u.User.Password(); pw || u.Scheme != "ssh" {
			return fmt.Errorf("must not carry user information (no credentials in a spec)")
		}
	}
	return nil
}
