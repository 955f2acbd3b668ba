package v4

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// defaultNotify fills a notify's timeout and retries and normalises the case of event names.
func defaultNotify(n *Notify) {
	for i, e := range n.Spec.Events {
		n.Spec.Events[i] = canon(e, NotifyEvents()...)
	}
	if n.Spec.TimeoutSeconds == 0 {
		n.Spec.TimeoutSeconds = DefaultNotifyTimeout
	}
	if n.Spec.MaxRetries == nil {
		r := DefaultNotifyMaxRetries
		n.Spec.MaxRetries = &r
	}
}

// headerNamePattern is an HTTP token (RFC 9110 §5.6.2).
var headerNamePattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// headersBerthSets are set by berth on every callback and cannot be overridden.
var headersBerthSets = []string{"Content-Type", "Content-Length", "Host"}

// maxNotifyURLLen keeps URLs printable in events and tables.
const maxNotifyURLLen = 2048

func validateNotify(n *Notify, errs *FieldErrors) {
	s := &n.Spec
	checkNotifyURL("spec.url", s.URL, errs)
	seen := map[string]bool{}
	for i, e := range s.Events {
		p := fmt.Sprintf("spec.events[%d]", i)
		oneOf(p, e, errs, NotifyEvents()...)
		if seen[e] {
			errs.add(p, "must be unique: %q is listed twice", e)
		}
		seen[e] = true
	}
	seen = map[string]bool{}
	for i, ns := range s.Namespaces {
		p := fmt.Sprintf("spec.namespaces[%d]", i)
		switch {
		case seen[ns]:
			errs.add(p, "must be unique: %q is listed twice", ns)
		case ns == NotifyAllNamespaces:
			if len(s.Namespaces) > 1 {
				errs.add(p, `"*" (every namespace) must be the only entry`)
			}
		case ns != DefaultNamespace:
			checkName(p, ns, errs)
		}
		seen[ns] = true
	}
	for _, k := range sortedStringKeys(s.Headers) {
		p := joinKey("spec.headers", k)
		switch {
		case !headerNamePattern.MatchString(k):
			errs.add(p, "must be an HTTP header name (letters, digits and !#$%%&'*+.^_`|~-), got %q", truncate(k, 80))
		case slices.ContainsFunc(headersBerthSets, func(h string) bool { return strings.EqualFold(h, k) }):
			errs.add(p, "is set by berth and cannot be changed")
		}
		if !labelValuePatter.MatchString(s.Headers[k]) {
			errs.add(p, "value must not contain control characters")
		}
	}
	if s.TimeoutSeconds < 1 || s.TimeoutSeconds > MaxNotifyTimeout {
		errs.add("spec.timeoutSeconds", "must be 1-%d seconds, got %d", MaxNotifyTimeout, s.TimeoutSeconds)
	}
	if r := s.MaxRetries; r != nil && (*r < 0 || *r > MaxNotifyRetries) {
		errs.add("spec.maxRetries", "must be 0-%d, got %d", MaxNotifyRetries, *r)
	}
}

// checkNotifyURL accepts absolute http and https URLs without credentials: a URL is shown
// in events and tables, so a secret belongs in spec.headers.
func checkNotifyURL(p, s string, errs *FieldErrors) {
	if s == "" {
		errs.add(p, "required: the http or https URL to POST to")
		return
	}
	if len(s) > maxNotifyURLLen {
		errs.add(p, "must be at most %d characters, got %d", maxNotifyURLLen, len(s))
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		errs.add(p, "must be a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		errs.add(p, "must be an http:// or https:// URL, got %q", truncate(s, 120))
	case u.Host == "" || u.Hostname() == "":
		errs.add(p, "must name a host, got %q", truncate(s, 120))
	case u.User != nil:
		errs.add(p, "must not hold credentials (they would show in events); put them in spec.headers")
	case u.Fragment != "":
		errs.add(p, "must not have a #fragment, got %q", truncate(s, 120))
	}
}
