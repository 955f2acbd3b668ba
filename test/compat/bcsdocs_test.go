package compat

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bcsDocsDir holds BCS's own documentation examples and templates, unchanged, and what
// BCS did with each (expect.json; api/v4's TestBCSDocs reads the same files).
const bcsDocsDir = "../../api/v4/testdata/bcsdocs"

type bcsDocExpect struct {
	BCS      string   `json:"bcs"` // "accepted" or "refused"
	Warnings []string `json:"warnings"`
	Refusal  string   `json:"refusal"` // what a refused document's error says
}

// BCS's documents go through `berth apply` as a user gives them, against the real server
// (alone: no agent, so nothing is pulled or started): what BCS accepted is applied with
// berth's warnings on the CLI's standard error, naming each field, and refused with
// --validate=strict when berth has any warning, storing nothing; what BCS refused is
// refused both ways.
func TestBCSDocsThroughBerthApply(t *testing.T) {
	b := startBerth(t, "--agent=false")
	raw, err := os.ReadFile(filepath.Join(bcsDocsDir, "expect.json"))
	if err != nil {
		t.Fatal(err)
	}
	var expect map[string]bcsDocExpect
	if err := json.Unmarshal(raw, &expect); err != nil {
		t.Fatalf("expect.json: %v", err)
	}
	// Configmaps and secrets first: workloads that name them are checked against them.
	names := make([]string, 0, len(expect))
	for name := range expect {
		names = append(names, name)
	}
	rank := func(name string) int {
		if strings.Contains(name, "configmap") || strings.Contains(name, "secret") {
			return 0
		}
		return 1
	}
	slices.SortFunc(names, func(a, c string) int {
		if d := rank(a) - rank(c); d != 0 {
			return d
		}
		return strings.Compare(a, c)
	})
	applied := 0
	for _, name := range names {
		e := expect[name]
		file := filepath.Join(bcsDocsDir, name)
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			if e.BCS == "refused" {
				for _, mode := range []string{"warn", "strict"} {
					if out, err := b.apply(t, mode, file); err == nil {
						t.Errorf("--validate=%s applied a document BCS refused: %s", mode, out)
					} else if !strings.Contains(out, e.Refusal) {
						t.Errorf("--validate=%s refused it without saying %q:\n%s", mode, e.Refusal, out)
					}
				}
				return
			}
			if len(e.Warnings) > 0 {
				out, err := b.apply(t, "strict", file)
				if err == nil || !strings.Contains(out, "nothing was applied") {
					t.Fatalf("--validate=strict applied a document with warnings (%v): %s", err, out)
				}
				for _, field := range e.Warnings {
					if !strings.Contains(out, field) {
						t.Errorf("--validate=strict refused it without naming %s:\n%s", field, out)
					}
				}
			}
			out, err := b.apply(t, "warn", file)
			if err != nil {
				t.Fatalf("berth apply: %v\n%s", err, out)
			}
			for _, field := range e.Warnings {
				if !strings.Contains(out, field) {
					t.Errorf("berth apply warned without naming %s:\n%s", field, out)
				}
			}
			applied++
		})
	}
	if applied < 15 {
		t.Fatalf("only %d of BCS's documents were applied", applied)
	}
}

// apply runs `berth apply --validate=MODE -f file` as the management token and returns
// its standard output and error together.
func (b *berth) apply(t *testing.T, mode, file string) (string, error) {
	t.Helper()
	admin, err := os.ReadFile(filepath.Join(b.dataDir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(berthBin, "apply", "--validate="+mode, "-f", file)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "BERTH_SERVER="+b.url, "BERTH_TOKEN="+strings.TrimSpace(string(admin)),
		"BERTH_CA_CERT="+filepath.Join(b.dataDir, "ca.crt"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}
