package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveServer(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte("server: cfg-host:7000\nother: ignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyCfg := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(emptyCfg, []byte("# nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badCfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badCfg, []byte("server: [unclosed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	homeWithCfg := t.TempDir()
	if err := os.MkdirAll(filepath.Join(homeWithCfg, ".config", "berth"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(homeWithCfg, ".config", "berth", "config.yaml"), []byte("server: https://home-host\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		flag    string
		vars    map[string]string
		home    string
		want    string
		wantErr string
	}{
		{name: "flag wins", flag: "flag-host:1", vars: map[string]string{"BERTH_SERVER": "env-host:2", "BERTH_CONFIG": cfgFile}, want: "https://flag-host:1"},
		{name: "env over file", vars: map[string]string{"BERTH_SERVER": "http://env-host:2", "BERTH_CONFIG": cfgFile}, want: "http://env-host:2"},
		{name: "file named by BERTH_CONFIG", vars: map[string]string{"BERTH_CONFIG": cfgFile}, want: "https://cfg-host:7000"},
		{name: "file in home", home: homeWithCfg, want: "https://home-host"},
		{name: "file without server", vars: map[string]string{"BERTH_CONFIG": emptyCfg}, want: "https://127.0.0.1:7470"},
		{name: "default", home: t.TempDir(), want: "https://127.0.0.1:7470"},
		{name: "no home", want: "https://127.0.0.1:7470"},
		{name: "missing BERTH_CONFIG", vars: map[string]string{"BERTH_CONFIG": filepath.Join(dir, "nope.yaml")}, wantErr: "nope.yaml"},
		{name: "bad file", vars: map[string]string{"BERTH_CONFIG": badCfg}, wantErr: "bad.yaml"},
		{name: "bad env address", vars: map[string]string{"BERTH_SERVER": "ftp://x"}, wantErr: "$BERTH_SERVER"},
		{name: "several servers", flag: "a:1, http://b:2/,https://c", want: "https://a:1,http://b:2,https://c"},
		{name: "several from env", vars: map[string]string{"BERTH_SERVER": "a:1,b:2"}, want: "https://a:1,https://b:2"},
		{name: "one bad of several", flag: "a:1,,b:2", wantErr: "--server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &env{
				getenv: func(k string) string { return tt.vars[k] },
				home: func() (string, error) {
					if tt.home == "" {
						return "", errors.New("no home")
					}
					return tt.home, nil
				},
			}
			got, err := resolveServer(tt.flag, e)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("resolveServer = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestServerFlagReachesClient(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/configmaps", 200, `{"kind":"List","items":[]}`)
	// $BERTH_SERVER points nowhere; --server must win.
	r := runCLIEnv(t, map[string]string{"BERTH_SERVER": "127.0.0.1:1"}, "", "get", "cm", "--server", strings.TrimPrefix(url, "https://"))
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := api.got(); len(got) != 1 {
		t.Fatalf("requests = %v", got)
	}
	if r.stderr != "No configmaps found in namespace defaultGroup.\n" {
		t.Errorf("stderr = %q", r.stderr)
	}
}

// A config file with contexts: the current one is used; --context or $BERTH_CONTEXT choose
// another; an unknown one is an error naming those there are; use-context switches.
func TestContexts(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfgFile, []byte(`# my clusters
current-context: prod
contexts:
  - name: prod
    server: prod-1:7470,prod-2:7470
    ca-cert: prod-ca.crt
    token: berth-acl-prod00.0123456789abcdef
  - name: dev
    server: https://127.0.0.1:7470
    token: berth-acl-dev000.0123456789abcdef
`), 0o600)
	e := func(vars map[string]string) *env {
		return &env{getenv: func(k string) string { return vars[k] }, home: func() (string, error) { return "", errors.New("none") }}
	}
	base := map[string]string{"BERTH_CONFIG": cfgFile}
	if got, err := resolveServer("", e(base)); err != nil || got != "https://prod-1:7470,https://prod-2:7470" {
		t.Fatalf("current context server: %q %v", got, err)
	}
	if got, _ := resolveCACert("", e(base)); got != filepath.Join(dir, "prod-ca.crt") {
		t.Fatalf("current context CA: %q", got)
	}
	dev := map[string]string{"BERTH_CONFIG": cfgFile, "BERTH_CONTEXT": "dev"}
	if got, _ := resolveToken("", e(dev)); got != "berth-acl-dev000.0123456789abcdef" {
		t.Fatalf("dev token: %q", got)
	}
	// Flags and variables still win over the file.
	if got, _ := resolveToken("", e(map[string]string{"BERTH_CONFIG": cfgFile, "BERTH_TOKEN": "x"})); got != "x" {
		t.Fatalf("BERTH_TOKEN over the context: %q", got)
	}
	if _, err := resolveServer("", e(map[string]string{"BERTH_CONFIG": cfgFile, "BERTH_CONTEXT": "qa"})); err == nil || !strings.Contains(err.Error(), `no context "qa" (it has: prod, dev)`) {
		t.Fatalf("unknown context: %v", err)
	}

	r := runCLIEnv(t, base, "", "config", "use-context", "dev")
	if r.err != nil || !strings.Contains(r.stdout, "current context: dev") {
		t.Fatalf("use-context: %v %s", r.err, r.stdout)
	}
	data, _ := os.ReadFile(cfgFile)
	if !strings.Contains(string(data), "current-context: dev") || !strings.Contains(string(data), "# my clusters") {
		t.Fatalf("rewritten file:\n%s", data)
	}
	r = runCLIEnv(t, base, "", "config", "get-contexts")
	if r.err != nil || !strings.Contains(r.stdout, "*         dev") {
		t.Fatalf("get-contexts: %v\n%s", r.err, r.stdout)
	}
	if r := runCLIEnv(t, base, "", "config", "use-context", "qa"); r.err == nil {
		t.Fatal("use-context of an unknown context")
	}

	// --context chooses a context for one command, its server and token included.
	api, url := newFakeAPI(t)
	api.json("GET /v1/namespaces/defaultGroup/configmaps", 200, `{"kind":"List","items":[]}`)
	fake := filepath.Join(dir, "fake.yaml")
	os.WriteFile(fake, []byte(fmt.Sprintf("current-context: none\ncontexts:\n  - {name: none, server: 127.0.0.1:1}\n  - {name: fake, server: %s}\n", url)), 0o600)
	if r := runCLIEnv(t, map[string]string{"BERTH_CONFIG": fake}, "", "get", "cm", "--context", "fake"); r.err != nil || len(api.got()) != 1 {
		t.Fatalf("--context fake: %v, requests %v", r.err, api.got())
	}
}

// berth login checks the token with the server, then keeps it: in a context (made
// current) or in the top-level keys, keeping the rest of the file.
func TestLogin(t *testing.T) {
	api, url := newFakeAPI(t)
	api.json("GET /v1/acl/whoami", 200, `{"token":"berth-acl-abc123","name":"ci","policies":["dev"]}`)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfgFile, []byte("# mine\ncontexts:\n  - {name: dev, server: 127.0.0.1:1}\n"), 0o644)
	vars := map[string]string{"BERTH_CONFIG": cfgFile}
	r := runCLIEnv(t, vars, "", "login", "--context", "prod", "--server", url, "--token", "berth-acl-abc123.0123456789abcdef")
	if r.err != nil || !strings.Contains(r.stdout, "as berth-acl-abc123 (ci)") {
		t.Fatalf("login: %v %s", r.err, r.stdout)
	}
	data, _ := os.ReadFile(cfgFile)
	wantContains(t, string(data), "# mine", "current-context: prod", "name: prod", "token: berth-acl-abc123.0123456789abcdef", "name: dev")
	if fi, _ := os.Stat(cfgFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("config mode %v", fi.Mode())
	}
	if got, _ := resolveToken("", &env{getenv: func(k string) string { return vars[k] }}); got != "berth-acl-abc123.0123456789abcdef" {
		t.Errorf("the saved token is not used: %q", got)
	}
	// From standard input, into the top-level keys of a new file.
	fresh := map[string]string{"BERTH_CONFIG": filepath.Join(dir, "new.yaml")}
	if r := runCLIEnv(t, fresh, "berth-acl-abc123.0123456789abcdef\n", "login", "--server", url); r.err != nil {
		t.Fatalf("login from stdin: %v", r.err)
	}
	data, _ = os.ReadFile(fresh["BERTH_CONFIG"])
	if !strings.Contains(string(data), "token: berth-acl-abc123.0123456789abcdef") || strings.Contains(string(data), "contexts") {
		t.Errorf("new config:\n%s", data)
	}
	// A token the server refuses is not saved.
	api.json("GET /v1/acl/whoami", 401, `{"error":{"code":401,"reason":"Unauthorized","message":"401: token berth-acl-zzzzzz is unknown or revoked"}}`)
	bad := map[string]string{"BERTH_CONFIG": filepath.Join(dir, "bad.yaml")}
	if r := runCLIEnv(t, bad, "", "login", "--server", url, "--token", "berth-acl-zzzzzz.0123456789abcdef"); r.err == nil || !strings.Contains(r.err.Error(), "unknown or revoked") {
		t.Fatalf("refused login: %v", r.err)
	}
	if _, err := os.Stat(bad["BERTH_CONFIG"]); err == nil {
		t.Fatal("a refused token was saved")
	}
}
