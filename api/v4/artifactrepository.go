package v4

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// KindArtifactRepository is where a namespace's workflows keep artifacts besides the
// servers' embedded store: an S3-compatible bucket (docs/workflows.md, "Artifact
// repositories"). A workflow's artifact names one in repository.name.
const KindArtifactRepository Kind = "artifactrepository"

// ArtifactRepository is an artifact repository object (kind "artifactrepository").
type ArtifactRepository struct {
	TypeMeta
	Metadata ObjectMeta             `json:"metadata"`
	Spec     ArtifactRepositorySpec `json:"spec"`
}

// GetMeta returns the object's metadata.
func (a *ArtifactRepository) GetMeta() *ObjectMeta { return &a.Metadata }

// ArtifactRepositorySpec says where the artifacts are: one backend (S3 today).
type ArtifactRepositorySpec struct {
	// Default makes this the namespace's repository for artifacts that name none (at
	// most one per namespace); without one the servers' embedded store is the default.
	Default bool `json:"default,omitempty"`
	// S3 is a bucket of any S3-compatible store.
	S3 *S3ArtifactRepository `json:"s3,omitempty"`
}

// S3ArtifactRepository is a bucket of an S3-compatible store. The credentials are items
// of berth secrets of the same namespace, never in the object.
type S3ArtifactRepository struct {
	// Endpoint is host[:port], no scheme ("s3.eu-west-1.amazonaws.com", "minio:9000").
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Region   string `json:"region,omitempty"`
	// KeyPrefix is put before every key ("berth/" gives "berth/<ns>/<wf>/...").
	KeyPrefix string `json:"keyPrefix,omitempty"`
	// Insecure talks plain HTTP to the endpoint instead of HTTPS.
	Insecure        bool         `json:"insecure,omitempty"`
	AccessKeySecret SecretKeyRef `json:"accessKeySecret"`
	SecretKeySecret SecretKeyRef `json:"secretKeySecret"`
}

// SecretKeyRef names one item of a berth secret in the same namespace.
type SecretKeyRef struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// Bounds of an artifact repository's fields.
const (
	maxS3EndpointLen  = 253 + 6
	maxS3KeyPrefixLen = 512
	maxSecretKeyLen   = 253
)

var (
	bucketPattern    = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	regionPattern    = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)
	secretKeyPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
	hostLabel        = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?$`)
)

func validateArtifactRepository(a *ArtifactRepository, errs *FieldErrors) {
	s := a.Spec.S3
	if s == nil {
		errs.add("spec.s3", "required (the only kind of artifact repository there is)")
		return
	}
	checkS3Endpoint("spec.s3.endpoint", s.Endpoint, errs)
	if !bucketPattern.MatchString(s.Bucket) || strings.Contains(s.Bucket, "..") {
		errs.add("spec.s3.bucket", "must be 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit, got %q", truncate(s.Bucket, 80))
	}
	if s.Region != "" && !regionPattern.MatchString(s.Region) {
		errs.add("spec.s3.region", "must be lowercase letters, digits and '-' (at most 64), got %q", truncate(s.Region, 80))
	}
	checkKeyPrefix("spec.s3.keyPrefix", s.KeyPrefix, errs)
	checkSecretKeyRef("spec.s3.accessKeySecret", s.AccessKeySecret, errs)
	checkSecretKeyRef("spec.s3.secretKeySecret", s.SecretKeySecret, errs)
}

// checkS3Endpoint accepts host[:port]: a DNS name or an IP address, nothing else (no
// scheme, path, user or query): the server dials it, so it is checked again there
// against the addresses a namespace may not reach (internal/artifacts).
func checkS3Endpoint(p, e string, errs *FieldErrors) {
	if e == "" {
		errs.add(p, "required (host or host:port)")
		return
	}
	if len(e) > maxS3EndpointLen {
		errs.add(p, "must be at most %d characters, got %d", maxS3EndpointLen, len(e))
		return
	}
	if strings.ContainsAny(e, "/?#@ ") {
		errs.add(p, "must be host or host:port (no scheme, path, user or query), got %q", truncate(e, 80))
		return
	}
	host := e
	if h, port, err := net.SplitHostPort(e); err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			errs.add(p, "port must be 1 to 65535, got %q", truncate(port, 20))
			return
		}
		host = h
	}
	if net.ParseIP(host) != nil {
		return
	}
	for _, l := range strings.Split(host, ".") {
		if len(l) > 63 || !hostLabel.MatchString(l) {
			errs.add(p, "must be host or host:port (a DNS name or an IP address, no scheme or path), got %q", truncate(e, 80))
			return
		}
	}
}

// checkKeyPrefix accepts a relative prefix of '/'-separated segments, none "." or "..".
func checkKeyPrefix(p, s string, errs *FieldErrors) {
	if s == "" {
		return
	}
	if len(s) > maxS3KeyPrefixLen {
		errs.add(p, "must be at most %d characters, got %d", maxS3KeyPrefixLen, len(s))
		return
	}
	if err := checkKeySegments(strings.TrimSuffix(s, "/")); err != nil {
		errs.add(p, "%v, got %q", err, truncate(s, 80))
	}
}

// checkKeySegments reports why k is not '/'-separated segments, none empty, "." or "..",
// without control characters or backslashes.
func checkKeySegments(k string) error {
	for seg := range strings.SplitSeq(k, "/") {
		switch {
		case seg == "" || seg == "." || seg == "..":
			return fmt.Errorf("must be '/'-separated segments, none empty, \".\" or \"..\" (no leading '/')")
		case strings.ContainsFunc(seg, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }):
			return fmt.Errorf("must not contain control characters or '\\'")
		}
	}
	return nil
}

func checkSecretKeyRef(p string, r SecretKeyRef, errs *FieldErrors) {
	checkDataName(p+".name", r.Name, errs)
	switch {
	case r.Key == "":
		errs.add(p+".key", "required (the item of the secret)")
	case len(r.Key) > maxSecretKeyLen || !secretKeyPattern.MatchString(r.Key):
		errs.add(p+".key", "must be letters, digits, '.', '_' and '-' (at most %d), got %q", maxSecretKeyLen, truncate(r.Key, 80))
	}
}

// MaxArtifactKeyLen bounds an artifact's key in a repository.
const MaxArtifactKeyLen = 1024

// CheckArtifactKey reports why k cannot be an artifact's key: '/'-separated segments,
// none empty, "." or "..", without control characters or '\', at most
// MaxArtifactKeyLen bytes.
func CheckArtifactKey(k string) error {
	if k == "" {
		return fmt.Errorf("required")
	}
	if len(k) > MaxArtifactKeyLen {
		return fmt.Errorf("must be at most %d bytes, got %d", MaxArtifactKeyLen, len(k))
	}
	return checkKeySegments(k)
}
