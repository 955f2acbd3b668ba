package cli

import (
	"errors"
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
