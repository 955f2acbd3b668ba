package sim

import (
	"errors"
	"fmt"
	"slices"

	v4 "github.com/berthhq/berth/api/v4"
)

// linkLevels are the levels a --gpu-file may give a link.
var linkLevels = []string{v4.GPULinkNVLink, v4.GPULinkPCIeSwitch, v4.GPULinkCPU, v4.GPULinkCrossCPU}

// BuildCards turns a --gpu-file's cards into a node's cards, checking each field (the
// error names it: "[2].links[0].to"). Links are made both ways; two cards the file does
// not link are linked through their CPU: "cpu" on one NUMA node, "cross-cpu" otherwise.
func BuildCards(specs []CardSpec) ([]v4.NodeGPU, error) {
	switch {
	case len(specs) == 0:
		return nil, errors.New("no cards")
	case len(specs) > v4.MaxGPUsPerNode:
		return nil, fmt.Errorf("%d cards: at most %d per node", len(specs), v4.MaxGPUsPerNode)
	}
	cards := make([]v4.NodeGPU, len(specs))
	levels := make([][]string, len(specs))
	for i, s := range specs {
		c, err := buildCard(i, s)
		if err != nil {
			return nil, err
		}
		cards[i] = c
		levels[i] = make([]string, len(specs))
	}
	for i, s := range specs {
		for k, l := range s.Links {
			p := fmt.Sprintf("[%d].links[%d]", i, k)
			switch {
			case l.To < 0 || l.To >= len(specs):
				return nil, fmt.Errorf("%s.to: %d is not a card of the list (0 to %d)", p, l.To, len(specs)-1)
			case l.To == i:
				return nil, fmt.Errorf("%s.to: a card does not link to itself", p)
			case !validLevel(l.Level):
				return nil, fmt.Errorf("%s.level: %q: use %v", p, l.Level, linkLevels)
			case levels[i][l.To] != "" && levels[i][l.To] != l.Level:
				return nil, fmt.Errorf("%s: cards %d and %d are linked both as %s and as %s", p, i, l.To, levels[i][l.To], l.Level)
			}
			levels[i][l.To], levels[l.To][i] = l.Level, l.Level
		}
	}
	for i := range cards {
		for j := range cards {
			if i == j {
				continue
			}
			level := levels[i][j]
			if level == "" {
				level = v4.GPULinkCrossCPU
				if cards[i].NUMANode >= 0 && cards[i].NUMANode == cards[j].NUMANode {
					level = v4.GPULinkCPU
				}
			}
			cards[i].Links = append(cards[i].Links, v4.GPULink{UUID: cards[j].UUID, Level: level})
		}
	}
	return cards, nil
}

// buildCard checks one card of the file and makes it, without its links.
func buildCard(i int, s CardSpec) (v4.NodeGPU, error) {
	p := fmt.Sprintf("[%d]", i)
	c := v4.NodeGPU{UUID: fmt.Sprintf("GPU-sim-%d", i), Index: i, Minor: i, Model: s.Model,
		PCIBusID: fmt.Sprintf("0000:%02x:00.0", 0x07+i), MIG: s.MIG}
	switch {
	case s.Model == "":
		return c, fmt.Errorf("%s.model: required", p)
	case len(s.Model) > 256:
		return c, fmt.Errorf("%s.model: at most 256 characters", p)
	case s.Memory != "" && s.MemoryMiB != 0:
		return c, fmt.Errorf("%s: give memory or memoryMiB, not both", p)
	case s.Memory == "" && s.MemoryMiB == 0:
		return c, fmt.Errorf("%s.memory: required (\"80GiB\", or memoryMiB: 81920)", p)
	}
	var err error
	if s.Memory != "" {
		if c.MemoryMiB, err = parseMiB(s.Memory); err != nil {
			return c, fmt.Errorf("%s.memory: %w", p, err)
		}
	} else if c.MemoryMiB, err = parseMiB(fmt.Sprint(s.MemoryMiB)); err != nil {
		return c, fmt.Errorf("%s.memoryMiB: %w", p, err)
	}
	if s.NUMANode != nil {
		if *s.NUMANode < -1 {
			return c, fmt.Errorf("%s.numaNode: %d: give -1 (unknown) or a NUMA node", p, *s.NUMANode)
		}
		c.NUMANode = *s.NUMANode
	}
	return c, nil
}

func validLevel(l string) bool { return slices.Contains(linkLevels, l) }

// cardsFor is the template's cards for one node: UUIDs of the node's own
// ("GPU-<node>-<index>"), the links renamed with them.
func cardsFor(node string, tmpl []v4.NodeGPU) []v4.NodeGPU {
	rename := make(map[string]string, len(tmpl))
	for _, c := range tmpl {
		rename[c.UUID] = fmt.Sprintf("GPU-%s-%d", node, c.Index)
	}
	out := make([]v4.NodeGPU, len(tmpl))
	for i, c := range tmpl {
		c.UUID = rename[c.UUID]
		links := make([]v4.GPULink, len(c.Links))
		for j, l := range c.Links {
			links[j] = v4.GPULink{UUID: rename[l.UUID], Level: l.Level}
		}
		c.Links = links
		out[i] = c
	}
	return out
}
