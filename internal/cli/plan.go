package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/client"
)

// ExitUnplaced is the exit status of `berth plan` when some instance fits nowhere.
const ExitUnplaced = 2

func newPlanCommand(o *options) *cobra.Command {
	f := fileFlags{oneRequest: true} // one request body, as apply
	var validate validateFlag
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR|-",
		Short: "Show where the instances of files' objects would be placed, changing nothing",
		Long: "Ask the scheduler where the instances of the applications, processes, deployments\n" +
			"and daemonsets in the files would go, without writing anything. Instances that\n" +
			"already run are not placed again. For instances that fit nowhere, it says how many\n" +
			"nodes each check rejected.\n\n" +
			"Files are read as for `berth apply`, --validate too. Exit status: 0 if every instance fits, 2 if\n" +
			"some cannot be placed, 1 on an error.",
		Example: "  berth plan -f examples/gamesvc.json\n" +
			"  berth plan -f specs/ -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := refuseNamespaceFlag(cmd, "plan"); err != nil {
				return err
			}
			mode, err := validate.mode()
			if err != nil {
				return err
			}
			format, err := o.format()
			if err != nil {
				return err
			}
			if format == outName {
				return errors.New("plan prints a table, json or yaml; -o name is not supported")
			}
			docs, err := f.documents(o.env.stdin)
			if err != nil {
				return err
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				res, err := c.PlanValidated(ctx, buildStream(docs), mode)
				if err != nil {
					return planError(err, docs)
				}
				if format == outJSON || format == outYAML {
					err = printStructured(o.out(), format, res)
				} else {
					err = printPlan(o.out(), res)
				}
				if err != nil {
					return err
				}
				for _, r := range res.Results {
					if !r.Fits() {
						return &ExitError{Code: ExitUnplaced}
					}
				}
				return nil
			})
		},
	}
	f.register(cmd, "plan")
	validate.register(cmd)
	return cmd
}

// printPlan writes, per object, a table of where its instances would go and a line for
// the instances that fit nowhere, then the objects that are not placed at all.
func printPlan(w io.Writer, res *client.PlanResult) error {
	for i, r := range res.Results {
		if i > 0 {
			fmt.Fprintln(w)
		}
		ref := objectRef(r.Kind, r.Namespace, r.Name)
		planned := len(r.Placements) + len(r.Unplaced)
		switch {
		case planned == 0:
			fmt.Fprintf(w, "%s: nothing to place (%s already placed)\n", ref, count(len(r.Existing), "instance"))
			continue
		case len(r.Existing) > 0:
			fmt.Fprintf(w, "%s: %s to place, %d already placed\n", ref, count(planned, "instance"), len(r.Existing))
		default:
			fmt.Fprintf(w, "%s: %s to place\n", ref, count(planned, "instance"))
		}
		if len(r.Placements) > 0 {
			rows := make([][]string, 0, len(r.Placements))
			header := []string{"INDEX", "NODE", "PORTS"}
			withGPUs := slices.ContainsFunc(r.Placements, func(p v4.PlanPlacement) bool { return len(p.GPUs) > 0 })
			if withGPUs {
				header = append(header, "GPUS")
			}
			for _, p := range r.Placements {
				row := []string{strconv.Itoa(p.Index), p.Node, planPorts(p.Ports)}
				if withGPUs {
					row = append(row, planGPUs(p.GPUs))
				}
				rows = append(rows, row)
			}
			if err := writeTable(w, header, rows); err != nil {
				return err
			}
			for _, p := range r.Placements {
				if len(p.PassedOver) > 0 {
					fmt.Fprintf(w, "instance %d on %s passes over ports other programs hold there: %s\n", p.Index, p.Node, planPortList(p.PassedOver))
				}
			}
		}
		printPreemptions(w, r.Preemptions)
		if len(r.Unplaced) > 0 {
			fmt.Fprintf(w, "%s of %s %s/%s cannot be placed: %s\n",
				count(len(r.Unplaced), "instance"), r.Kind, r.Namespace, r.Name, orNone(r.Message))
		}
	}
	if len(res.Skipped) > 0 {
		if len(res.Results) > 0 {
			fmt.Fprintln(w)
		}
		for _, s := range res.Skipped {
			why := s.Reason
			if why == "" {
				why = "not placed"
			}
			fmt.Fprintf(w, "%s skipped: %s\n", objectRef(s.Kind, s.Namespace, s.Name), why)
		}
	}
	return nil
}

// planPorts renders host ports as name:port, comma-separated.
func planPorts(ports []v4.AllocatedPort) string {
	return joinOrNone(ports, ",", func(p v4.AllocatedPort) string { return namedPort(p.Name, p.HostPort) })
}

// planPortList writes port numbers comma-separated.
func planPortList(ports []int) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = strconv.Itoa(p)
	}
	return strings.Join(parts, ",")
}

// planGPUs writes the cards of one placement, "task:gpu0,gpu1" for whole cards and
// "task:gpu2(30%,4GiB)" for a share.
func planGPUs(gpus []v4.TaskGPU) string {
	return joinOrNone(gpus, " ", func(g v4.TaskGPU) string {
		s := g.Task + ":gpu" + strconv.Itoa(g.Index)
		if !g.Whole() {
			s += fmt.Sprintf("(%d%%,%s)", g.Cores, mib(g.MemoryMiB))
		}
		return s
	})
}

// mib writes card memory in GiB when whole.
func mib(m int) string {
	if m >= 1024 && m%1024 == 0 {
		return strconv.Itoa(m/1024) + "GiB"
	}
	return strconv.Itoa(m) + "MiB"
}

// count writes "1 instance", "3 instances".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// planError names files in field errors, as apply does, without apply's wording.
func planError(err error, docs []document) error { return documentsError(err, docs, "") }

// printPreemptions says who each preempting instance would evict.
func printPreemptions(w io.Writer, pre []v4.PlanPreemption) {
	for _, p := range pre {
		victims := make([]string, 0, len(p.Victims))
		for _, v := range p.Victims {
			victims = append(victims, fmt.Sprintf("%s %s/%s instance %d (%s, priority %d)", v.Kind, v.Namespace, v.Name, v.Index, v.TaskGroup, v.Priority))
		}
		if p.Hidden > 0 {
			victims = append(victims, fmt.Sprintf("%d task groups of namespaces you may not read", p.Hidden))
		}
		fmt.Fprintf(w, "instance %d on %s preempts %s\n", p.Index, p.Node, strings.Join(victims, "; "))
	}
}
