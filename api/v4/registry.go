package v4

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Image pull secrets (docs/docker.md, "Images and registries"): a secret of type
// SecretTypeDockerConfigJSON holds, under the data key DockerConfigJSONKey, a Docker
// config file's JSON ({"auths":{"registry.local:5000":{"username":..,"password":..}}}),
// as Kubernetes' secrets of that type and `docker login` write it. A container names
// such secrets in imagePullSecrets; the agent pulls its image with the entry of the
// image's registry.
const (
	SecretTypeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	DockerConfigJSONKey        = ".dockerconfigjson"
	// DockerHub is the registry of an image reference that names none ("busybox",
	// "library/busybox"), as Docker reads it.
	DockerHub = "docker.io"
)

// Bounds of a docker config secret: the agent decodes it at each start of a pod that
// names it, and a registry's credentials are short.
const (
	MaxDockerConfigBytes   = 64 << 10
	MaxDockerConfigAuths   = 64
	MaxRegistryCredential  = 4096
	MaxImagePullSecrets    = 8
	maxRegistryNameDisplay = 80
)

// RegistryCredentials are the user name and password of one registry.
type RegistryCredentials struct {
	Username, Password string
}

// DockerConfig is a parsed docker config: credentials by normalised registry host.
type DockerConfig struct {
	Auths map[string]RegistryCredentials
}

// dockerConfigAuth is one entry of a docker config's "auths": a user and password, or
// auth, base64("user:password"), as `docker login` writes it.
type dockerConfigAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Auth     string `json:"auth"`
}

// ParseDockerConfig reads a docker config's JSON. Its errors never quote a credential:
// they name the registry entry and what is wrong with it.
func ParseDockerConfig(b []byte) (*DockerConfig, error) {
	if len(b) > MaxDockerConfigBytes {
		return nil, fmt.Errorf("at most %d bytes, got %d", MaxDockerConfigBytes, len(b))
	}
	var raw struct {
		Auths map[string]dockerConfigAuth `json:"auths"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a docker config's JSON ({\"auths\":{\"registry\":{\"username\":..,\"password\":..}}}): %s", jsonProblem(err))
	}
	if len(raw.Auths) == 0 {
		return nil, errors.New(`"auths" is required: at least one registry`)
	}
	if len(raw.Auths) > MaxDockerConfigAuths {
		return nil, fmt.Errorf(`"auths": at most %d registries, got %d`, MaxDockerConfigAuths, len(raw.Auths))
	}
	cfg := &DockerConfig{Auths: map[string]RegistryCredentials{}}
	for _, key := range sortedStringKeys(raw.Auths) {
		host, err := NormalizeRegistry(key)
		if err != nil {
			return nil, fmt.Errorf("auths[%q]: %w", truncate(key, maxRegistryNameDisplay), err)
		}
		creds, err := raw.Auths[key].credentials()
		if err != nil {
			return nil, fmt.Errorf("auths[%q]: %w", truncate(key, maxRegistryNameDisplay), err)
		}
		cfg.Auths[host] = creds
	}
	return cfg, nil
}

// jsonProblem says what is wrong with JSON without quoting it: a syntax error's offset,
// or the field of the wrong type.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at offset %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("%s must be %s, got a JSON %s", orRoot(typ.Field), typ.Type, typ.Value)
	}
	return "invalid JSON"
}

func orRoot(field string) string {
	if field == "" {
		return "the document"
	}
	return field
}

// credentials are the entry's user and password: username and password when given,
// otherwise auth decoded.
func (a dockerConfigAuth) credentials() (RegistryCredentials, error) {
	c := RegistryCredentials{Username: a.Username, Password: a.Password}
	if c.Username == "" && c.Password == "" && a.Auth != "" {
		if len(a.Auth) > 2*MaxRegistryCredential {
			return c, fmt.Errorf("auth: at most %d bytes", 2*MaxRegistryCredential)
		}
		dec, err := base64.StdEncoding.DecodeString(a.Auth)
		if err != nil {
			return c, errors.New(`auth must be base64 of "user:password"`)
		}
		user, pass, ok := strings.Cut(string(dec), ":")
		if !ok {
			return c, errors.New(`auth must be base64 of "user:password" (no ':' in it)`)
		}
		c = RegistryCredentials{Username: user, Password: pass}
	}
	switch {
	case c.Username == "":
		return c, errors.New(`username (or auth) is required`)
	case len(c.Username) > MaxRegistryCredential || len(c.Password) > MaxRegistryCredential:
		return c, fmt.Errorf("username and password: at most %d bytes each", MaxRegistryCredential)
	case strings.ContainsAny(c.Username, "\x00\n\r:") || strings.ContainsAny(c.Password, "\x00\n\r"):
		return c, errors.New("username and password must not hold NUL or line breaks, nor the username a ':'")
	}
	return c, nil
}

// Lookup returns the credentials for registry host (normalised, as ImageRegistry says).
func (c *DockerConfig) Lookup(host string) (RegistryCredentials, bool) {
	if c == nil {
		return RegistryCredentials{}, false
	}
	creds, ok := c.Auths[host]
	return creds, ok
}

// dockerHubAliases are the names a docker config gives Docker Hub (`docker login`
// writes https://index.docker.io/v1/).
var dockerHubAliases = []string{DockerHub, "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com"}

// NormalizeRegistry turns a docker config's registry key into the host (with its port)
// an image reference names: the scheme and path go ("https://r.local:5000/v2/" is
// r.local:5000), the host is lower case, and Docker Hub's names are docker.io.
func NormalizeRegistry(key string) (string, error) {
	h := strings.TrimSpace(key)
	if i := strings.Index(h, "://"); i >= 0 {
		h = h[i+3:]
	}
	h, _, _ = strings.Cut(h, "/")
	h = strings.ToLower(h)
	if h == "" {
		return "", errors.New("a registry host is required")
	}
	if !isRegistryHost(h) {
		return "", errors.New("must be a registry host, host:port or a URL of one")
	}
	if slices.Contains(dockerHubAliases, h) {
		return DockerHub, nil
	}
	return h, nil
}

// isRegistryHost reports whether h is host or host:port, the host a DNS name, an IPv4
// address or a bracketed IPv6 address.
func isRegistryHost(h string) bool {
	if len(h) > 255 {
		return false
	}
	host, port := h, ""
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		host, port = h[:i], h[i+1:]
		if port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
			return false
		}
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		return strings.Trim(host[1:len(host)-1], "0123456789abcdef:.") == ""
	}
	return host != "" && strings.Trim(host, "abcdefghijklmnopqrstuvwxyz0123456789.-_") == ""
}

// ImageRegistry is the registry host an image reference pulls from, as Docker reads it:
// the part before the first '/' when it has a '.' or a ':' or is localhost (lower
// case), docker.io otherwise ("busybox", "library/busybox", "team/app:1").
func ImageRegistry(image string) string {
	first, rest, ok := strings.Cut(image, "/")
	if !ok || rest == "" || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		return DockerHub
	}
	h := strings.ToLower(first)
	if slices.Contains(dockerHubAliases, h) {
		return DockerHub
	}
	return h
}
