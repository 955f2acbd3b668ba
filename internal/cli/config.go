package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/berthhq/berth/internal/client"
)

// fileConfig is the client config file. Unknown keys are ignored so newer files keep
// working with older binaries. Its top-level server, ca-cert and token are used unless a
// context is chosen (--context, $BERTH_CONTEXT, current-context:), whose keys then are.
type fileConfig struct {
	clusterSettings `yaml:",inline"`
	CurrentContext  string        `yaml:"current-context"`
	Contexts        []fileContext `yaml:"contexts"`
}

// clusterSettings say how to reach one cluster.
type clusterSettings struct {
	Server string `yaml:"server"`
	// CACert is the CA certificate file that verifies the servers (docs/security.md).
	CACert string `yaml:"ca-cert"`
	// Token is the user's token (docs/security.md, Users and policies).
	Token string `yaml:"token"`
}

// fileContext is one named cluster of the config file, as kubeconfig contexts are.
type fileContext struct {
	Name            string `yaml:"name"`
	clusterSettings `yaml:",inline"`
}

// resolveServer finds the server address: --server, then $BERTH_SERVER, then `server:` in
// the config file ($BERTH_CONFIG, else ~/.config/berth/config.yaml), then the default.
// Each may list several servers, comma separated, for failover (docs/ha.md). Every
// address is normalised (a bare host:port gets https://); a bad one is reported with where
// it came from.
func resolveServer(flag string, e *env) (string, error) {
	addr, from, err := lookupServer(flag, e)
	if err != nil {
		return "", err
	}
	var out []string
	for _, part := range strings.Split(addr, ",") {
		u, err := client.ParseServerURL(part)
		if err != nil {
			return "", fmt.Errorf("server address from %s: %w", from, err)
		}
		out = append(out, u.String())
	}
	return strings.Join(out, ","), nil
}

func lookupServer(flag string, e *env) (addr, from string, err error) {
	if flag != "" {
		return flag, "--server", nil
	}
	if v := e.getenv("BERTH_SERVER"); v != "" {
		return v, "$BERTH_SERVER", nil
	}
	path, explicit, err := configPath(e)
	if err != nil {
		return "", "", err
	}
	if path != "" {
		cfg, err := readConfig(path, explicit, e)
		if err != nil {
			return "", "", err
		}
		if cfg.Server != "" {
			return cfg.Server, "config file " + path, nil
		}
	}
	return client.DefaultServer, "the default", nil
}

// configPath returns the config file to read and whether the user named it ($BERTH_CONFIG),
// in which case it must exist. Without a home directory there is no default file.
func configPath(e *env) (string, bool, error) {
	if p := e.getenv("BERTH_CONFIG"); p != "" {
		return p, true, nil
	}
	home, err := e.home()
	if err != nil || home == "" {
		return "", false, nil
	}
	return filepath.Join(home, ".config", "berth", "config.yaml"), false, nil
}

// readConfig reads the config file and returns the settings of its chosen context
// ($BERTH_CONTEXT, which --context sets, else current-context:), or its top-level ones.
func readConfig(path string, mustExist bool, e *env) (clusterSettings, error) {
	var cfg fileConfig
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !mustExist {
		return clusterSettings{}, nil
	}
	if err != nil {
		return clusterSettings{}, fmt.Errorf("read config file: %w", err)
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return clusterSettings{}, fmt.Errorf("config file %s: %w", path, err)
	}
	name := e.getenv("BERTH_CONTEXT")
	if name == "" {
		name = cfg.CurrentContext
	}
	if name == "" {
		return cfg.clusterSettings, nil
	}
	for _, c := range cfg.Contexts {
		if c.Name == name {
			return c.clusterSettings, nil
		}
	}
	var names []string
	for _, c := range cfg.Contexts {
		names = append(names, c.Name)
	}
	return clusterSettings{}, fmt.Errorf("config file %s has no context %q (it has: %s)", path, name, orNone(strings.Join(names, ", ")))
}

// resolveCACert finds the CA certificate that verifies the servers: --ca-cert, then
// $BERTH_CA_CERT, then `ca-cert:` in the config file; "" trusts the system's roots.
func resolveCACert(flag string, e *env) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if v := e.getenv("BERTH_CA_CERT"); v != "" {
		return v, nil
	}
	path, explicit, err := configPath(e)
	if err != nil || path == "" {
		return "", err
	}
	cfg, err := readConfig(path, explicit, e)
	if err != nil {
		return "", err
	}
	if cfg.CACert != "" && !filepath.IsAbs(cfg.CACert) { // relative to the config file
		return filepath.Join(filepath.Dir(path), cfg.CACert), nil
	}
	return cfg.CACert, nil
}

// resolveToken finds the user's token: --token, then $BERTH_TOKEN, then `token:` in the
// config file; "" calls as anonymous.
func resolveToken(flag string, e *env) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if v := e.getenv("BERTH_TOKEN"); v != "" {
		return v, nil
	}
	path, explicit, err := configPath(e)
	if err != nil || path == "" {
		return "", err
	}
	cfg, err := readConfig(path, explicit, e)
	return cfg.Token, err
}
