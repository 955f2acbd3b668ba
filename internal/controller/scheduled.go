package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/berthhq/berth/internal/scheduler"
)

// A Scheduled event names where a pass placed its instances, by node: "placed instances
// 0, 2 and 4 on a; 1 and 3 on b". A burst of thousands stays one short line: runs of
// consecutive indexes are ranges (0-99), each node lists a few items and counts the
// rest, and only the first nodes are named.
const (
	maxNodesNamed   = 5 // nodes named in one event; the others are counted
	maxIndexesNamed = 8 // items (indexes or ranges) named per node; the others are counted
)

// scheduledMessage says where a pass placed instances.
func scheduledMessage(placed []scheduler.Placement) string {
	byNode := map[string][]int{}
	var nodes []string
	for _, p := range placed {
		if _, seen := byNode[p.Node]; !seen {
			nodes = append(nodes, p.Node)
		}
		byNode[p.Node] = append(byNode[p.Node], p.Index)
	}
	for _, n := range nodes {
		slices.Sort(byNode[n])
	}
	// The node of the lowest index first, so the message reads in index order.
	slices.SortStableFunc(nodes, func(a, b string) int { return byNode[a][0] - byNode[b][0] })
	noun := "instances"
	if len(placed) == 1 {
		noun = "instance"
	}
	var parts []string
	for _, n := range nodes[:min(len(nodes), maxNodesNamed)] {
		parts = append(parts, indexList(byNode[n])+" on "+n)
	}
	msg := "placed " + noun + " " + strings.Join(parts, "; ")
	if rest := nodes[min(len(nodes), maxNodesNamed):]; len(rest) > 0 {
		n := 0
		for _, node := range rest {
			n += len(byNode[node])
		}
		msg += fmt.Sprintf("; and %d more on %d other nodes", n, len(rest))
	}
	return msg
}

// indexList writes sorted indexes for people: runs of three or more as ranges, at most
// maxIndexesNamed items, joined with commas and a final "and".
func indexList(idx []int) string {
	var items []string
	count := 0 // indexes written as items
	for i := 0; i < len(idx) && len(items) < maxIndexesNamed; {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j-i >= 2 {
			items = append(items, fmt.Sprintf("%d-%d", idx[i], idx[j]))
		} else {
			j = i
			items = append(items, fmt.Sprint(idx[i]))
		}
		count += j - i + 1
		i = j + 1
	}
	if left := len(idx) - count; left > 0 {
		items = append(items, fmt.Sprintf("%d more", left))
	}
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
