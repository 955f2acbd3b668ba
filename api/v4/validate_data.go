package v4

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"
)

var dataKeyPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

func validateDataKey(p, k string, errs *FieldErrors) {
	if len(k) > 253 || !dataKeyPattern.MatchString(k) {
		errs.add(p, "key must be at most 253 letters, digits, '.', '_' or '-', got %q", truncate(k, 80))
	}
}

func validateConfigMap(c *ConfigMap, errs *FieldErrors) {
	for _, k := range sortedStringKeys(c.Datas) {
		d := c.Datas[k]
		p := joinKey("datas", k)
		validateDataKey(p, k, errs)
		oneOf(p+".type", d.Type, errs, "file", "http", "https", "ftp", "ftps")
		switch d.Type {
		case "file":
			if _, err := base64.StdEncoding.DecodeString(d.Content); err != nil {
				errs.add(p+".content", "must be base64 (type file): %v", err)
			}
		case "http", "https", "ftp", "ftps":
			u, err := url.Parse(d.Content)
			if err != nil || u.Scheme != d.Type || u.Host == "" {
				errs.add(p+".content", "must be a %s:// URL for type %s, got %q", d.Type, d.Type, truncate(d.Content, 120))
			}
		}
	}
}

func validateSecret(s *Secret, errs *FieldErrors) {
	for _, k := range sortedStringKeys(s.Datas) {
		p := joinKey("datas", k)
		validateDataKey(p, k, errs)
		if _, err := base64.StdEncoding.DecodeString(s.Datas[k].Content); err != nil {
			errs.add(p+".content", "must be base64: %v", err)
		}
	}
	if s.Type == SecretTypeDockerConfigJSON {
		validateDockerConfigSecret(s, errs)
	}
}

// validateDockerConfigSecret checks an image pull secret: its docker config must parse
// (registry.go), so that a pod that names it fails on its registry's answer rather than on
// the secret. Errors name the entry, never a credential.
func validateDockerConfigSecret(s *Secret, errs *FieldErrors) {
	p := joinKey("datas", DockerConfigJSONKey)
	d, ok := s.Datas[DockerConfigJSONKey]
	if !ok {
		errs.add(p, "required: a secret of type %s holds a docker config's JSON under the key %q", SecretTypeDockerConfigJSON, DockerConfigJSONKey)
		return
	}
	if len(d.Content) > base64.StdEncoding.EncodedLen(MaxDockerConfigBytes) {
		errs.add(p+".content", "at most %d bytes once decoded", MaxDockerConfigBytes)
		return
	}
	b, err := base64.StdEncoding.DecodeString(d.Content)
	if err != nil {
		return // reported above
	}
	if _, err := ParseDockerConfig(b); err != nil {
		errs.add(p+".content", "%v", err)
	}
}

// validatePullSecrets checks a container's imagePullSecrets: at most
// MaxImagePullSecrets names of secrets, each once.
func validatePullSecrets(p string, refs []LocalObjectReference, errs *FieldErrors) {
	if len(refs) > MaxImagePullSecrets {
		errs.add(p, "at most %d secrets, got %d", MaxImagePullSecrets, len(refs))
		return
	}
	seen := map[string]bool{}
	for i, r := range refs {
		rp := fmt.Sprintf("%s[%d].name", p, i)
		checkDataName(rp, r.Name, errs)
		if seen[r.Name] {
			errs.add(rp, "secret %q is named twice", truncate(r.Name, 80))
		}
		seen[r.Name] = true
	}
}

func validateConfigMapRefs(p string, refs []ConfigMapRef, errs *FieldErrors) {
	for i, r := range refs {
		rp := fmt.Sprintf("%s[%d]", p, i)
		checkDataName(rp+".name", r.Name, errs)
		if len(r.Items) == 0 {
			errs.add(rp+".items", "required: at least one item")
		}
		for j, it := range r.Items {
			validateItem(fmt.Sprintf("%s.items[%d]", rp, j), it.Type, it.DataKey, it.KeyOrPath, errs)
		}
	}
}

func validateSecretRefs(p string, refs []SecretRef, errs *FieldErrors) {
	for i, r := range refs {
		rp := fmt.Sprintf("%s[%d]", p, i)
		checkDataName(rp+".secretName", r.SecretName, errs)
		if len(r.Items) == 0 {
			errs.add(rp+".items", "required: at least one item")
		}
		for j, it := range r.Items {
			validateItem(fmt.Sprintf("%s.items[%d]", rp, j), it.Type, it.DataKey, it.KeyOrPath, errs)
		}
	}
}

// validateItem checks one env or file injection of a configmap or secret item.
func validateItem(p, typ, dataKey, keyOrPath string, errs *FieldErrors) {
	oneOf(p+".type", typ, errs, InjectEnv, InjectFile)
	if dataKey == "" {
		errs.add(p+".dataKey", "required")
	}
	switch {
	case keyOrPath == "":
		errs.add(p+".keyOrPath", "required")
	case typ == InjectEnv && !envNamePattern.MatchString(keyOrPath):
		errs.add(p+".keyOrPath", "must be an environment variable name, got %q", truncate(keyOrPath, 80))
	case typ == InjectFile && !path.IsAbs(keyOrPath) && !strings.HasPrefix(keyOrPath, "${"):
		errs.add(p+".keyOrPath", "must be an absolute file path, got %q", truncate(keyOrPath, 80))
	case typ == InjectFile && HasDotDot(keyOrPath):
		// A file path is where the agent writes the item: for a process on the host, for a
		// container under the task's files dir. ".." is never needed to name it and is how
		// a path leaves the directory it is relative to (${workPath}/../..), so it is
		// refused (docs/spec.md, "Configmaps and secrets").
		errs.add(p+".keyOrPath", "must not contain '..' segments, got %q", truncate(keyOrPath, 80))
	case typ == InjectFile && strings.IndexByte(keyOrPath, 0) >= 0:
		errs.add(p+".keyOrPath", "must not contain a NUL byte")
	}
}

// HasDotDot reports whether a slash-separated path has a ".." segment: the way a path
// leaves the directory it is meant to stay in (${work_base_dir}/../..).
func HasDotDot(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// maxServicePorts bounds a service's ports: each is a rule of every node's service proxy
// and a set of names of its DNS server (as many as a Kubernetes EndpointSlice holds).
const maxServicePorts = 100

// maxClusterIPs bounds a service's clusterIP entries: the DNS server resolves the names
// among them at each query.
const maxClusterIPs = 16

// dnsNamePattern is a DNS name: dot-separated labels of letters, digits and inner
// hyphens, each at most 63 characters, with an optional final dot (253 in all, checked
// apart).
var dnsNamePattern = regexp.MustCompile(`^(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.(?i:[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?))*\.?$`)

// isDNSName reports whether s is a DNS name whose last label is not all digits (so a
// mistyped address such as 10.0.0.300 is not taken for a name).
func isDNSName(s string) bool {
	if len(s) > 253 || !dnsNamePattern.MatchString(s) {
		return false
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	return strings.Trim(labels[len(labels)-1], "0123456789") != ""
}

func validateService(s *Service, errs *FieldErrors) {
	if len(s.Spec.Selector) == 0 {
		errs.add("spec.selector", "required: at least one label")
	}
	validateLabels("spec.selector", s.Spec.Selector, errs)
	oneOf("spec.type", s.Spec.Type, errs, "ClusterIP", "None")
	if len(s.Spec.ClusterIP) > maxClusterIPs {
		errs.add("spec.clusterIP", "at most %d entries, got %d", maxClusterIPs, len(s.Spec.ClusterIP))
	}
	for i, ip := range s.Spec.ClusterIP {
		if net.ParseIP(ip) == nil && !isDNSName(ip) {
			errs.add(fmt.Sprintf("spec.clusterIP[%d]", i), "must be an IP address or a DNS name (www.example.com), got %q", truncate(ip, 60))
		}
	}
	if len(s.Spec.Ports) == 0 {
		errs.add("spec.ports", "required: at least one port")
	}
	if len(s.Spec.Ports) > maxServicePorts {
		errs.add("spec.ports", "at most %d ports, got %d", maxServicePorts, len(s.Spec.Ports))
	}
	names := map[string]bool{}
	for i, pt := range s.Spec.Ports {
		pp := fmt.Sprintf("spec.ports[%d]", i)
		switch {
		case pt.Name == "":
			errs.add(pp+".name", "required")
		case !portNamePattern.MatchString(pt.Name):
			errs.add(pp+".name", "must be letters, digits, '_' or '-', got %q", truncate(pt.Name, 80))
		case names[pt.Name]:
			errs.add(pp+".name", "must be unique: %q is used twice", pt.Name)
		}
		names[pt.Name] = true
		oneOf(pp+".protocol", pt.Protocol, errs, "tcp", "udp", "http", "https")
		if pt.ServicePort < 1 || pt.ServicePort > 65535 {
			errs.add(pp+".servicePort", "must be a port number 1-65535, got %d", pt.ServicePort)
		}
		if pt.TargetPort < 0 || pt.TargetPort > 65535 {
			errs.add(pp+".targetPort", "must be a port number 0-65535, got %d", pt.TargetPort)
		}
		if pt.NodePort < 0 || pt.NodePort > 65535 {
			errs.add(pp+".nodePort", "must be a port number 0-65535, got %d", pt.NodePort)
		}
		if pt.Path != "" && pt.Path[0] != '/' {
			errs.add(pp+".path", "must start with '/', got %q", truncate(pt.Path, 80))
		}
	}
	validateLoadBalance(s, errs)
}
