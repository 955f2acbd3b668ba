package v4

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

func TestImageRegistry(t *testing.T) {
	for _, tt := range []struct{ image, want string }{
		{"busybox", DockerHub},
		{"busybox:1", DockerHub},
		{"library/busybox:1", DockerHub},
		{"team/app:1", DockerHub},
		{"docker.io/library/busybox", DockerHub},
		{"index.docker.io/team/app", DockerHub},
		{"registry.local:5000/app:1", "registry.local:5000"},
		{"127.0.0.1:5000/e2e/busybox:1", "127.0.0.1:5000"},
		{"localhost/app", "localhost"},
		{"localhost:5000/app", "localhost:5000"},
		{"Registry.Example.COM/App", "registry.example.com"},
		{"r.example/a/b/c@sha256:abcd", "r.example"},
		{"team:5000", DockerHub}, // no '/': a name and a tag
		{"[::1]:5000/app", "[::1]:5000"},
	} {
		if got := ImageRegistry(tt.image); got != tt.want {
			t.Errorf("ImageRegistry(%q) = %q, want %q", tt.image, got, tt.want)
		}
	}
}

func TestNormalizeRegistry(t *testing.T) {
	for _, tt := range []struct{ key, want, err string }{
		{"registry.local:5000", "registry.local:5000", ""},
		{"https://registry.local:5000/v2/", "registry.local:5000", ""},
		{"http://R.Local", "r.local", ""},
		{"https://index.docker.io/v1/", DockerHub, ""},
		{"docker.io", DockerHub, ""},
		{"[::1]:5000", "[::1]:5000", ""},
		{"", "", "required"},
		{"https://", "", "required"},
		{"r.local:port", "", "must be a registry host"},
		{"r.local:123456", "", "must be a registry host"},
		{"r local", "", "must be a registry host"},
		{"r.local\x00", "", "must be a registry host"},
	} {
		got, err := NormalizeRegistry(tt.key)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("NormalizeRegistry(%q): error %v, want ...%s...", tt.key, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("NormalizeRegistry(%q) = %q, %v, want %q", tt.key, got, err, tt.want)
		}
	}
}

func TestParseDockerConfig(t *testing.T) {
	const secret = "s3cr3t-PW"
	auth := base64.StdEncoding.EncodeToString([]byte("bob:" + secret))
	cfg, err := ParseDockerConfig([]byte(`{"auths":{"https://r.local:5000/v2/":{"username":"ann","password":"` + secret + `"},` +
		`"https://index.docker.io/v1/":{"auth":"` + auth + `"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := cfg.Lookup("r.local:5000"); !ok || c.Username != "ann" || c.Password != secret {
		t.Errorf("r.local:5000: %v %v", c.Username, ok)
	}
	if c, ok := cfg.Lookup(ImageRegistry("busybox")); !ok || c.Username != "bob" || c.Password != secret {
		t.Errorf("docker.io: %v %v", c.Username, ok)
	}
	if _, ok := cfg.Lookup("other.local"); ok {
		t.Error("a registry without an entry has credentials")
	}
	// Bad configs: each error says what is wrong and never quotes a credential.
	for _, tt := range []struct{ name, json, want string }{
		{"not JSON", `{"auths":` + secret, "invalid JSON"},
		{"wrong type", `{"auths":{"r.local":{"password":7}}}`, "must be string"},
		{"no auths", `{"credsStore":"x"}`, `"auths" is required`},
		{"bad key", `{"auths":{"r local":{"username":"a","password":"` + secret + `"}}}`, "must be a registry host"},
		{"no user", `{"auths":{"r.local":{"password":"` + secret + `"}}}`, "username (or auth) is required"},
		{"auth not base64", `{"auths":{"r.local":{"auth":"` + secret + `!"}}}`, "auth must be base64"},
		{"auth without colon", `{"auths":{"r.local":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(secret)) + `"}}}`, "no ':'"},
		{"line break", `{"auths":{"r.local":{"username":"a","password":"` + secret + `\n"}}}`, "line breaks"},
		{"long password", `{"auths":{"r.local":{"username":"a","password":"` + strings.Repeat(secret, 500) + `"}}}`, "at most 4096 bytes"},
		{"too big", `{"auths":{"r.local":{"username":"a","password":"` + strings.Repeat(secret, 8000) + `"}}}`, "at most 65536 bytes"},
	} {
		_, err := ParseDockerConfig([]byte(tt.json))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want ...%s...", tt.name, err, tt.want)
		} else if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), auth) {
			t.Errorf("%s: the error quotes the credential: %v", tt.name, err)
		}
	}
	var many strings.Builder
	for i := range MaxDockerConfigAuths + 1 {
		fmt.Fprintf(&many, `,"r%d.local":{"username":"a"}`, i)
	}
	if _, err := ParseDockerConfig([]byte(`{"auths":{` + many.String()[1:] + `}}`)); err == nil || !strings.Contains(err.Error(), "at most 64 registries") {
		t.Errorf("65 registries: %v", err)
	}
}

func dockerConfigSecret(content string) *Secret {
	s := &Secret{TypeMeta: TypeMeta{APIVersion: "v4", Kind: KindSecret}, Metadata: ObjectMeta{Name: "regcred", Namespace: "default"},
		Type: SecretTypeDockerConfigJSON, Datas: map[string]SecretData{}}
	if content != "" {
		s.Datas[DockerConfigJSONKey] = SecretData{Content: base64.StdEncoding.EncodeToString([]byte(content))}
	}
	return s
}

func TestPullSecretRules(t *testing.T) {
	const c0 = "spec.template.spec.containers[0]"
	const key = `datas[".dockerconfigjson"]`
	pull := func(names ...string) Object {
		return appWith(func(a *Application) {
			for _, n := range names {
				container(a).ImagePullSecrets = append(container(a).ImagePullSecrets, LocalObjectReference{Name: n})
			}
		})
	}
	runRules(t, []ruleCase{
		{"secret name", pull("bad.name"), c0 + ".imagePullSecrets[0].name", "no '.'"},
		{"secret name required", pull(""), c0 + ".imagePullSecrets[0].name", "required"},
		{"secret twice", pull("a", "a"), c0 + ".imagePullSecrets[1].name", "named twice"},
		{"too many", pull("a", "b", "c", "d", "e", "f", "g", "h", "i"), c0 + ".imagePullSecrets", "at most 8"},
		{"pull policy", appWith(func(a *Application) { container(a).ImagePullPolicy = "Sometimes" }), c0 + ".imagePullPolicy", `"Never"`},
		{"config key missing", dockerConfigSecret(""), key, "required"},
		{"config shape", dockerConfigSecret(`{"auths":{"r.local":{"password":"pw"}}}`), key + ".content", `auths["r.local"]: username (or auth) is required`},
		{"config JSON", dockerConfigSecret(`[1]`), key + ".content", "not a docker config's JSON"},
	})
	ok := dockerConfigSecret(`{"auths":{"r.local:5000":{"username":"a","password":"pw"}}}`)
	if errs := Validate(ok); len(errs) > 0 {
		t.Errorf("a valid docker config secret: %v", errs)
	}
	if errs := Validate(pull("regcred", "other")); len(errs) > 0 {
		t.Errorf("two pull secrets: %v", errs)
	}
}

// FuzzParseDockerConfig: no panic, and what parses has a valid host and credentials of
// bounded size.
func FuzzParseDockerConfig(f *testing.F) {
	f.Add([]byte(`{"auths":{"https://r.local:5000/v2/":{"username":"a","password":"b"},"docker.io":{"auth":"YTpi"}}}`))
	f.Add([]byte(`{"auths":{"[::1]:5000":{"auth":"OmI="}},"auths":{}}`))
	f.Add([]byte(`{"auths":{"r":{"username":"a\u0000"}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := ParseDockerConfig(b)
		if err != nil {
			return
		}
		for host, c := range cfg.Auths {
			if again, err := NormalizeRegistry(host); err != nil || again != host {
				t.Fatalf("host %q normalises to %q, %v", host, again, err)
			}
			if c.Username == "" || len(c.Username) > MaxRegistryCredential || len(c.Password) > MaxRegistryCredential {
				t.Fatalf("credentials of %q out of bounds", host)
			}
		}
	})
}
