package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad --gpus and --gpu-file values fail before anything starts, naming the flag.
func TestSimGPUFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("- {model: A100, memory: 40GiB, links: [{to: 3, level: nvlink}]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpus", "a100x8"}, `--gpus "a100x8": use COUNT:MODEL[:MEMORY], as 8:A100-80GB or 4:T4:16GiB`},
		{[]string{"--gpus", "8:T4"}, `--gpus "8:T4": model "T4" does not say its memory`},
		{[]string{"--gpus", "100:A100-80GB"}, `--gpus "100:A100-80GB": count 100: give 1 to 64 cards`},
		{[]string{"--gpu-file", filepath.Join(dir, "none.yaml")}, "--gpu-file " + filepath.Join(dir, "none.yaml") + ": open"},
		{[]string{"--gpu-file", bad}, "--gpu-file " + bad + ": [0].links[0].to: 3 is not a card of the list"},
		{[]string{"--gpus", "8:A100-80GB", "--gpu-file", bad}, "give --gpus or --gpu-file, not both"},
	} {
		args := append([]string{"sim", "--server", "127.0.0.1:1", "--token", "berth-x.y", "--data-dir", dir}, c.args...)
		r := runCLI(t, "", "", args...)
		if r.err == nil || !strings.Contains(r.err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, r.err, c.want)
		}
	}
	for _, c := range []struct{ gpus, file string }{{"8:A100-80GB", ""}, {"", ""}} {
		cards, err := simGPUs(c.gpus, c.file)
		if err != nil || (c.gpus != "") != (len(cards) == 8) {
			t.Errorf("%q %q: %d cards, %v", c.gpus, c.file, len(cards), err)
		}
	}
}
