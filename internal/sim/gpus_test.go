package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v4 "github.com/berthhq/berth/api/v4"
)

func TestParseGPUs(t *testing.T) {
	for _, c := range []struct {
		in      string
		n       int
		model   string
		mem     int
		wantErr string
	}{
		{in: "8:A100-80GB", n: 8, model: "A100-80GB", mem: 81920},
		{in: "2:NVIDIA H100-SXM-80G", n: 2, model: "NVIDIA H100-SXM-80G", mem: 81920},
		{in: "4:T4:16GiB", n: 4, model: "T4", mem: 16384},
		{in: "1:L4:23034MiB", n: 1, model: "L4", mem: 23034},
		{in: "1:L4:23034", n: 1, model: "L4", mem: 23034},
		{in: " 64:A10-24GB ", n: 64, model: "A10-24GB", mem: 24576},
		{in: "", wantErr: "use COUNT:MODEL[:MEMORY]"},
		{in: "a100x8", wantErr: "use COUNT:MODEL[:MEMORY]"},
		{in: "8", wantErr: "use COUNT:MODEL[:MEMORY]"},
		{in: "0:A100-80GB", wantErr: "count 0: give 1 to 64"},
		{in: "65:A100-80GB", wantErr: "count 65"},
		{in: "8:T4", wantErr: `model "T4" does not say its memory: give it, as 8:T4:16GiB`},
		{in: "8: :16GiB", wantErr: "the model is empty"},
		{in: "8:T4:lots", wantErr: `memory "lots"`},
		{in: "8:T4:0GiB", wantErr: `memory "0GiB"`},
		{in: "8:T4:99999999GiB", wantErr: `memory "99999999GiB"`},
		{in: "8:T4:16GiB:x", wantErr: "use COUNT:MODEL[:MEMORY]"},
	} {
		cards, err := ParseGPUs(c.in)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: %v, want %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if len(cards) != c.n || cards[0].Model != c.model || cards[0].MemoryMiB != c.mem || len(cards[0].Links) != c.n-1 {
			t.Errorf("%q: %d cards, first %+v", c.in, len(cards), cards[0])
		}
	}
}

func TestReadGPUFile(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, body string
		wantErr    string
		check      func(t *testing.T, cards []v4.NodeGPU)
	}{{
		name: "cards.yaml",
		body: `
- {model: A100, memory: 40GiB, numaNode: 0, links: [{to: 1, level: nvlink}]}
- {model: A100, memoryMiB: 40960, numaNode: 0}
- {model: T4, memory: 16GiB, numaNode: 1, mig: true}
`,
		check: func(t *testing.T, cards []v4.NodeGPU) {
			level := func(i, j int) string {
				for _, l := range cards[i].Links {
					if l.UUID == cards[j].UUID {
						return l.Level
					}
				}
				return ""
			}
			if len(cards) != 3 || cards[1].MemoryMiB != 40960 || cards[2].NUMANode != 1 || !cards[2].MIG ||
				level(0, 1) != v4.GPULinkNVLink || level(1, 0) != v4.GPULinkNVLink || // stated once, both ways
				level(0, 2) != v4.GPULinkCrossCPU || level(2, 1) != v4.GPULinkCrossCPU || len(cards[0].Links) != 2 {
				t.Errorf("cards %+v", cards)
			}
		},
	}, {
		name: "cards.json",
		body: `[{"model":"A100","memory":"40GiB"},{"model":"A100","memory":"40GiB","links":[{"to":0,"level":"pcie-switch"}]},{"model":"A100","memory":"40GiB"}]`,
		check: func(t *testing.T, cards []v4.NodeGPU) {
			if cards[0].Links[0].Level != v4.GPULinkPCIeSwitch || cards[0].Links[1].Level != v4.GPULinkCPU {
				t.Errorf("links of card 0: %+v", cards[0].Links)
			}
		},
	}, {
		name: "unknown.yaml", body: "- {model: A100, memory: 40GiB, color: red}", wantErr: "field color not found",
	}, {
		name: "unknown.json", body: `[{"model":"A100","memory":"40GiB","color":"red"}]`, wantErr: `unknown field "color"`,
	}, {
		name: "notalist.yaml", body: "model: A100", wantErr: "not a list of cards",
	}, {
		name: "empty.yaml", body: "[]", wantErr: "no cards",
	}, {
		name: "nomodel.yaml", body: "- {memory: 40GiB}", wantErr: "[0].model: required",
	}, {
		name: "nomem.yaml", body: "- {model: A100}", wantErr: "[0].memory: required",
	}, {
		name: "bothmem.yaml", body: "- {model: A100, memory: 40GiB, memoryMiB: 40960}", wantErr: "[0]: give memory or memoryMiB, not both",
	}, {
		name: "badmem.yaml", body: "- {model: A100, memory: 40GiB}\n- {model: A100, memoryMiB: -1}", wantErr: "[1].memoryMiB",
	}, {
		name: "numa.yaml", body: "- {model: A100, memory: 40GiB, numaNode: -2}", wantErr: "[0].numaNode: -2",
	}, {
		name: "linkrange.yaml", body: "- {model: A100, memory: 40GiB, links: [{to: 1, level: nvlink}]}", wantErr: "[0].links[0].to: 1 is not a card of the list (0 to 0)",
	}, {
		name: "linkself.yaml", body: "- {model: A, memory: 1GiB}\n- {model: A, memory: 1GiB, links: [{to: 1, level: nvlink}]}", wantErr: "[1].links[0].to: a card does not link to itself",
	}, {
		name: "level.yaml", body: "- {model: A, memory: 1GiB, links: [{to: 1, level: infiniband}]}\n- {model: A, memory: 1GiB}", wantErr: `[0].links[0].level: "infiniband"`,
	}, {
		name: "disagree.yaml", body: "- {model: A, memory: 1GiB, links: [{to: 1, level: nvlink}]}\n- {model: A, memory: 1GiB, links: [{to: 0, level: cpu}]}",
		wantErr: "[1].links[0]: cards 1 and 0 are linked both as nvlink and as cpu",
	}, {
		name: "toomany.yaml", body: strings.Repeat("- {model: A, memory: 1GiB}\n", 65), wantErr: "65 cards: at most 64",
	}} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		cards, err := ReadGPUFile(path)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: %v, want %q", c.name, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		c.check(t, cards)
	}
	if _, err := ReadGPUFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file was read")
	}
}

// Each node's cards have UUIDs of their own, and the links follow them.
func TestCardsForNode(t *testing.T) {
	tmpl, err := ParseGPUs("4:A100-40GB")
	if err != nil {
		t.Fatal(err)
	}
	a, b := cardsFor("n-00000", tmpl), cardsFor("n-00001", tmpl)
	if a[2].UUID != "GPU-n-00000-2" || b[2].UUID != "GPU-n-00001-2" || a[0].Links[0].UUID != "GPU-n-00000-1" ||
		a[0].Links[0].Level != v4.GPULinkNVLink || tmpl[0].Links[0].UUID == a[0].Links[0].UUID {
		t.Errorf("node a %+v\nnode b %+v\ntemplate %+v", a, b, tmpl)
	}
}
