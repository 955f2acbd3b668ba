package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

func newNodesCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "nodes",
		Short: "List the cluster's nodes",
		Long: "List the cluster's nodes (the same as `berth get nodes`).\n\n" +
			"STATUS is Ready, NotReady or Lost, with \",SchedulingDisabled\" for disabled nodes;\n" +
			"CPU, MEMORY and DISK are what berth may allocate on the node.",
		Example: "  berth nodes\n  berth nodes -o yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				nodes, err := c.Nodes(ctx)
				if err != nil {
					return err
				}
				if len(nodes) == 0 && format == outTable {
					fmt.Fprintln(o.env.stderr, "No nodes found.")
					return nil
				}
				objs := make([]v4.Object, len(nodes))
				for i, n := range nodes {
					objs[i] = n
				}
				return printObjects(o, v4.KindNode, format, objs, false, false)
			})
		},
	}
}

// nodeColumns are the columns of `berth nodes` and `berth get nodes` between NAME and AGE.
func nodeColumns() kindColumns {
	return kindColumns{[]string{"STATUS", "IP", "CPU", "MEMORY", "DISK", "TAINTS"}, func(o v4.Object) []string {
		n, _ := o.(*v4.Node)
		if n == nil {
			return []string{"", "", "", "", "", ""}
		}
		a := n.Spec.Allocatable
		return []string{nodeStatus(n), orNone(n.Spec.IP), strconv.FormatFloat(a.CPU, 'f', -1, 64),
			megabytes(a.MemoryMB), megabytes(a.DiskMB), strconv.Itoa(len(n.Spec.Taints))}
	}}
}

// nodeStatus is the phase, plus ",SchedulingDisabled" like kubectl's cordoned nodes.
func nodeStatus(n *v4.Node) string {
	s := n.Status.Phase
	if s == "" {
		s = v4.NodeNotReady
	}
	if n.Spec.Disabled {
		s += ",SchedulingDisabled"
	}
	return s
}

// megabytes renders an amount in MB with a unit that keeps it short: "512MB", "16GB",
// "14.6GB", "1.5TB" (1024-based, as BCS counts memory and disk).
func megabytes(mb float64) string {
	units := []string{"MB", "GB", "TB", "PB"}
	i := 0
	for mb >= 1024 && i < len(units)-1 {
		mb /= 1024
		i++
	}
	s := strconv.FormatFloat(mb, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + units[i]
}
