package v4

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// A configuration is an administrator's, but it is still checked field by field: a typo
// in a selector would silently send every write of the cluster to a hook, or none.

// webhookNamePattern is a DNS subdomain, as Kubernetes names hooks ("label.example.com").
var webhookNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)

// DecodeAdmissionWebhook reads one configuration (JSON, unknown fields refused) and
// validates it.
func DecodeAdmissionWebhook(data []byte) (*AdmissionWebhook, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c AdmissionWebhook
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("not an admission webhook configuration: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not an admission webhook configuration: data after the JSON value")
	}
	if err := CheckDuplicateKeys(data); err != nil {
		return nil, err
	}
	if err := ValidateAdmissionWebhook(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// HooksField is the path of the configuration's hook list ("webhooks" or
// "admissionWebhooks").
func (c *AdmissionWebhook) HooksField() string {
	if len(c.Webhooks) > 0 {
		return "webhooks"
	}
	return "admissionWebhooks"
}

// ValidateAdmissionWebhook checks a configuration; FieldErrors name every bad field.
func ValidateAdmissionWebhook(c *AdmissionWebhook) error {
	var errs FieldErrors
	switch c.Kind {
	case KindAdmissionWebhook, WebhookKindBCS, WebhookKindMutating, WebhookKindValidating:
	default:
		errs.add("kind", "must be %s, %s, %s or %s, got %q", KindAdmissionWebhook, WebhookKindBCS,
			WebhookKindMutating, WebhookKindValidating, truncate(c.Kind, 80))
	}
	checkWebhookName("metadata.name", c.Metadata.Name, &errs)
	validateLabels("metadata.labels", c.Metadata.Labels, &errs)
	if len(c.Webhooks) > 0 && len(c.AdmissionWebhooks) > 0 {
		errs.add("webhooks", "give webhooks (Kubernetes' shape) or admissionWebhooks (BCS's), not both")
	}
	hooks, field := c.Hooks(), c.HooksField()
	switch {
	case len(hooks) == 0:
		errs.add(field, "required: at least one webhook")
	case len(hooks) > MaxWebhooksPerConfig:
		errs.add(field, "at most %d webhooks, got %d", MaxWebhooksPerConfig, len(hooks))
	}
	if c.ResourcesRef != nil {
		validateResourcesRef(c.ResourcesRef, &errs)
	}
	seen := map[string]bool{}
	for i := range hooks {
		if i >= MaxWebhooksPerConfig {
			break
		}
		p := fmt.Sprintf("%s[%d]", field, i)
		h := &hooks[i]
		if seen[h.Name] {
			errs.add(p+".name", "%q is the name of an earlier webhook of the configuration", h.Name)
		}
		seen[h.Name] = true
		validateWebhook(p, c, h, &errs)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func checkWebhookName(p, s string, errs *FieldErrors) {
	if !webhookNamePattern.MatchString(s) || strings.Contains(s, "..") {
		errs.add(p, "must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253), got %q", truncate(s, 80))
	}
}

func validateResourcesRef(r *WebhookResourcesRef, errs *FieldErrors) {
	if _, ok := admitOperation(r.Operation); !ok {
		errs.add("resourcesRef.operation", "must be Create, Update or Delete, got %q", truncate(r.Operation, 40))
	}
	if _, err := ParseKind(r.Kind); err != nil || Kind(strings.ToLower(r.Kind)).System() {
		errs.add("resourcesRef.kind", "must be a kind users write (%s), got %q", kindList(), truncate(r.Kind, 40))
	}
}

// admitOperation reads an operation in BCS's or Kubernetes' spelling ("Create",
// "CREATE"); "*" stands for every one.
func admitOperation(s string) (string, bool) {
	switch u := strings.ToUpper(s); u {
	case AdmitCreate, AdmitUpdate, AdmitDelete, "*":
		return u, true
	}
	return "", false
}

// WebhookOperation is admitOperation for the webhook package: "" when not one.
func WebhookOperation(s string) string { op, _ := admitOperation(s); return op }

func validateWebhook(p string, c *AdmissionWebhook, h *Webhook, errs *FieldErrors) {
	checkWebhookName(p+".name", h.Name, errs)
	if h.Type != "" && h.Type != WebhookMutating && h.Type != WebhookValidating {
		errs.add(p+".type", "must be Mutating or Validating, got %q", truncate(h.Type, 40))
	}
	if c.Kind == WebhookKindValidating && h.Type == WebhookMutating {
		errs.add(p+".type", "a ValidatingWebhookConfiguration holds validating webhooks only")
	}
	validateClientConfig(p+".clientConfig", &h.ClientConfig, errs)
	switch {
	case len(h.Rules) == 0 && c.ResourcesRef == nil:
		errs.add(p+".rules", "required: at least one rule (or the configuration's resourcesRef)")
	case len(h.Rules) > 0 && c.ResourcesRef != nil:
		errs.add(p+".rules", "a configuration with resourcesRef selects its writes there: leave rules out")
	case len(h.Rules) > MaxWebhookRules:
		errs.add(p+".rules", "at most %d rules, got %d", MaxWebhookRules, len(h.Rules))
	}
	for i := range min(len(h.Rules), MaxWebhookRules) {
		validateRule(fmt.Sprintf("%s.rules[%d]", p, i), &h.Rules[i], errs)
	}
	if h.NamespaceSelector != nil {
		validateNamespaceSelector(p+".namespaceSelector", h.NamespaceSelector, errs)
	}
	if h.ObjectSelector != nil {
		validateLabelSelector(p+".objectSelector", h.ObjectSelector.MatchLabels, h.ObjectSelector.MatchExpressions, errs)
	}
	if t := h.TimeoutSeconds; t != nil && (*t < 1 || *t > MaxWebhookTimeout) {
		errs.add(p+".timeoutSeconds", "must be 1 to %d seconds, got %d", MaxWebhookTimeout, *t)
	}
	oneOf(p+".failurePolicy", h.FailurePolicy, errs, "", WebhookFail, WebhookIgnore)
	oneOf(p+".reinvocationPolicy", h.ReinvocationPolicy, errs, "", ReinvokeNever, ReinvokeIfNeeded)
	if h.ReinvocationPolicy == ReinvokeIfNeeded && c.HookType(h) != WebhookMutating {
		errs.add(p+".reinvocationPolicy", "only a mutating webhook is called again")
	}
	if len(h.AdmissionReviewVersions) > MaxWebhookValues {
		errs.add(p+".admissionReviewVersions", "at most %d values", MaxWebhookValues)
	}
}

func validateClientConfig(p string, cc *WebhookClientConfig, errs *FieldErrors) {
	if cc.Service != nil {
		errs.add(p+".service", "berth calls webhooks by URL: give clientConfig.url (https://host:port/path) instead of a service")
	}
	checkWebhookURL(p+".url", cc.URL, errs)
	if len(cc.CABundle) > MaxWebhookCABundleLen {
		errs.add(p+".caBundle", "at most %d bytes, got %d", MaxWebhookCABundleLen, len(cc.CABundle))
	} else if cc.CABundle != "" {
		if _, err := WebhookCAPool(cc.CABundle); err != nil {
			errs.add(p+".caBundle", "%v", err)
		}
	}
}

// checkWebhookURL: https only, a host, no user info (a password in a configuration
// others read) and no fragment. Whether the URL is berth's own API is the server's
// check, which knows its addresses.
func checkWebhookURL(p, s string, errs *FieldErrors) {
	if s == "" {
		errs.add(p, "required: the https URL the server calls")
		return
	}
	if len(s) > MaxWebhookURLLen {
		errs.add(p, "at most %d characters, got %d", MaxWebhookURLLen, len(s))
		return
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		errs.add(p, "not a URL: %v", err)
	case u.Scheme != "https":
		errs.add(p, "must be an https URL (the review carries the object and the user's policies), got scheme %q", truncate(u.Scheme, 20))
	case u.Hostname() == "":
		errs.add(p, "must name a host")
	case u.User != nil:
		errs.add(p, "must not carry user info (a password would be readable in the configuration)")
	case u.Fragment != "" || u.RawQuery != "" && strings.ContainsAny(u.RawQuery, "\x00\r\n"):
		errs.add(p, "must not have a fragment or control characters")
	}
	if err == nil && u.Port() != "" {
		if _, perr := net.LookupPort("tcp", u.Port()); perr != nil {
			errs.add(p, "port %q is not a port", truncate(u.Port(), 20))
		}
	}
}

// WebhookCAPool parses a caBundle: PEM certificates, or base64 of them (Kubernetes).
func WebhookCAPool(bundle string) (*x509.CertPool, error) {
	data := []byte(bundle)
	if !bytes.Contains(data, []byte("-----BEGIN")) {
		dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(bundle))
		if err != nil {
			return nil, errors.New("must be PEM certificates, or their base64")
		}
		data = dec
	}
	pool := x509.NewCertPool()
	n := 0
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %v", n+1, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, errors.New("holds no PEM certificate")
	}
	return pool, nil
}

func validateRule(p string, r *WebhookRule, errs *FieldErrors) {
	if len(r.Operations) == 0 {
		errs.add(p+".operations", "required: CREATE, UPDATE, DELETE or *")
	}
	checkCount(p+".operations", len(r.Operations), errs)
	for i, op := range r.Operations {
		if _, ok := admitOperation(op); !ok {
			errs.add(fmt.Sprintf("%s.operations[%d]", p, i), "must be CREATE, UPDATE, DELETE or *, got %q", truncate(op, 40))
		}
	}
	kinds := append(append([]string{}, r.Kinds...), r.Resources...)
	if len(kinds) == 0 {
		errs.add(p+".kinds", "required: the kinds (or resources) it applies to, \"*\" for all")
	}
	checkCount(p+".kinds", len(kinds), errs)
	for i, k := range kinds {
		field := fmt.Sprintf("%s.kinds[%d]", p, i)
		if i >= len(r.Kinds) {
			field = fmt.Sprintf("%s.resources[%d]", p, i-len(r.Kinds))
		}
		checkKindPattern(field, k, errs)
	}
	checkCount(p+".apiGroups", len(r.APIGroups), errs)
	checkCount(p+".apiVersions", len(r.APIVersions), errs)
}

func checkCount(p string, n int, errs *FieldErrors) {
	if n > MaxWebhookValues {
		errs.add(p, "at most %d values, got %d", MaxWebhookValues, n)
	}
}

// checkKindPattern accepts a kind, a plural or short name, or a glob ("*", "work*").
func checkKindPattern(p, k string, errs *FieldErrors) {
	if strings.ContainsAny(k, "*?[") {
		if _, err := path.Match(k, ""); err != nil || len(k) > 63 {
			errs.add(p, "not a valid glob: %q", truncate(k, 40))
		}
		return
	}
	if _, err := ParseKind(strings.TrimSuffix(k, "/*")); err != nil {
		errs.add(p, "%v", err)
	}
}

func validateNamespaceSelector(p string, s *WebhookNamespaceSelector, errs *FieldErrors) {
	if s.Operator != "" || len(s.Values) > 0 {
		oneOf(p+".operator", s.Operator, errs, "In", "NotIn")
		checkCount(p+".values", len(s.Values), errs)
		for i, v := range s.Values {
			if _, err := path.Match(v, ""); err != nil || v == "" || len(v) > 63 {
				errs.add(fmt.Sprintf("%s.values[%d]", p, i), "must be a namespace or a glob, got %q", truncate(v, 40))
			}
		}
	}
	for k := range s.MatchLabels {
		if k != NamespaceNameLabel {
			errs.add(p+".matchLabels", "a namespace has one label, %s (its name); got %q", NamespaceNameLabel, truncate(k, 60))
		}
	}
	for i, r := range s.MatchExpressions {
		if r.Key != NamespaceNameLabel {
			errs.add(fmt.Sprintf("%s.matchExpressions[%d].key", p, i), "a namespace has one label, %s (its name); got %q", NamespaceNameLabel, truncate(r.Key, 60))
		}
	}
	validateLabelSelector(p, s.MatchLabels, s.MatchExpressions, errs)
}

func validateLabelSelector(p string, labels map[string]string, exprs []WebhookLabelSelectorReq, errs *FieldErrors) {
	checkCount(p+".matchLabels", len(labels), errs)
	validateLabels(p+".matchLabels", labels, errs)
	checkCount(p+".matchExpressions", len(exprs), errs)
	for i, r := range exprs {
		q := fmt.Sprintf("%s.matchExpressions[%d]", p, i)
		if r.Key == "" || len(r.Key) > maxLabelKeyLen || !labelKeyPattern.MatchString(r.Key) {
			errs.add(q+".key", "must be a label key, got %q", truncate(r.Key, 60))
		}
		oneOf(q+".operator", r.Operator, errs, "In", "NotIn", "Exists", "DoesNotExist")
		checkCount(q+".values", len(r.Values), errs)
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				errs.add(q+".values", "required for %s", r.Operator)
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) > 0 {
				errs.add(q+".values", "must be empty for %s", r.Operator)
			}
		}
	}
}
