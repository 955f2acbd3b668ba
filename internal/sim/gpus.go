package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/devices/gpu"
)

// Simulated cards (docs/gpus.md, "Trying GPU scheduling without GPUs"): every simulated
// node registers the same cards, through the agent's own GPU path with a fake card
// source in place of NVML, so the scheduler places whole cards and shares on them as on
// real ones. The cards of Config.GPUs are a template: each node's get UUIDs of their own.

// maxGPUFile bounds a --gpu-file: 64 cards with their links fit in far less.
const maxGPUFile = 1 << 20

// gpusPattern is --gpus: COUNT:MODEL[:MEMORY].
var gpusPattern = regexp.MustCompile(`^([0-9]+):([^:]+)(?::([^:]+))?$`)

// modelMemory finds the memory in a model's name: "A100-80GB", "H100-SXM-80G".
var modelMemory = regexp.MustCompile(`(?i)[-_ ]([0-9]+)\s*G(?:I?B)?$`)

// ParseGPUs reads "COUNT:MODEL[:MEMORY]" ("8:A100-80GB", "4:T4:16GiB", "2:L4:23034MiB"):
// COUNT cards of MODEL, wired as gpu.FakeCards wires them (NVLink pairs, the pairs of each
// half behind one PCIe switch, the halves on NUMA nodes 0 and 1). MEMORY may be left out
// when the model's name ends with it ("-80GB").
func ParseGPUs(s string) ([]v4.NodeGPU, error) {
	m := gpusPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return nil, errors.New("use COUNT:MODEL[:MEMORY], as 8:A100-80GB or 4:T4:16GiB")
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 || n > v4.MaxGPUsPerNode {
		return nil, fmt.Errorf("count %s: give 1 to %d cards", m[1], v4.MaxGPUsPerNode)
	}
	model, mem := strings.TrimSpace(m[2]), m[3]
	if model == "" {
		return nil, errors.New("the model is empty")
	}
	if mem == "" {
		mm := modelMemory.FindStringSubmatch(model)
		if mm == nil {
			return nil, fmt.Errorf("model %q does not say its memory: give it, as %d:%s:16GiB", model, n, model)
		}
		mem = mm[1] + "GiB"
	}
	mib, err := parseMiB(mem)
	if err != nil {
		return nil, err
	}
	return gpu.FakeCards("sim", n, model, mib), nil
}

// parseMiB reads card memory: "80GiB", "80GB" (cards are sold in GiB), "16384MiB", or
// MiB without a unit.
func parseMiB(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"GIB", 1024}, {"GB", 1024}, {"G", 1024}, {"MIB", 1}, {"MB", 1}, {"M", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.Atoi(t)
	limit := 65536 * v4.VCUDAMemoryUnit // what a node may register
	if err != nil || v < 1 || v > limit/mult {
		return 0, fmt.Errorf("memory %q: give a whole number of GiB or MiB (1MiB to %dMiB), as 80GiB", s, limit)
	}
	return v * mult, nil
}

// CardSpec is one card of a --gpu-file.
type CardSpec struct {
	Model string `json:"model" yaml:"model"`
	// Memory is "80GiB", "16384MiB" (MemoryMiB may give it as a number instead).
	Memory    string `json:"memory" yaml:"memory"`
	MemoryMiB int    `json:"memoryMiB" yaml:"memoryMiB"`
	// NUMANode is the card's NUMA node (0 when left out, -1 unknown).
	NUMANode *int `json:"numaNode" yaml:"numaNode"`
	MIG      bool `json:"mig" yaml:"mig"`
	// Links are this card's links to others, by their place in the list; a link stated on
	// one side holds both ways.
	Links []CardLink `json:"links" yaml:"links"`
}

// CardLink is a link to the card at index To.
type CardLink struct {
	To    int    `json:"to" yaml:"to"`
	Level string `json:"level" yaml:"level"`
}

// ReadGPUFile reads a --gpu-file: a JSON (.json) or YAML list of CardSpec.
func ReadGPUFile(path string) ([]v4.NodeGPU, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) > maxGPUFile {
		return nil, fmt.Errorf("%d bytes: at most %d", len(data), maxGPUFile)
	}
	var specs []CardSpec
	if strings.EqualFold(filepath.Ext(path), ".json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(&specs)
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		err = dec.Decode(&specs)
	}
	if err != nil {
		return nil, fmt.Errorf("not a list of cards: %w", err)
	}
	return BuildCards(specs)
}
