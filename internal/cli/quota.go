package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/bytesize"
	"github.com/berthhq/berth/internal/client"
	"github.com/berthhq/berth/internal/quota"
)

// berth quota: a namespace's resource quota, limit defaults and storage limits
// (docs/cli.md, "berth quota"; docs/policy.md, "Quotas and limit defaults").
func newQuotaCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Read or set a namespace's quotas and limit defaults",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "get [NAMESPACE]",
		Short: "Show a namespace's quotas, usage and limit defaults (default: -n)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns := o.namespace
			if len(args) == 1 {
				ns = args[0]
			}
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				q, err := c.NamespaceQuota(ctx, ns)
				if err != nil {
					return err
				}
				return printQuota(o, q)
			})
		},
	})
	cmd.AddCommand(newQuotaSetCommand(o))
	cmd.AddCommand(&cobra.Command{
		Use:   "reset NAMESPACE",
		Short: "Remove a namespace's quota and limit defaults: the cluster's defaults apply (administrators)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				if err := c.ResetNamespaceQuota(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(o.out(), "namespace %s has the cluster's default limits\n", args[0])
				return nil
			})
		},
	})
	return cmd
}

type quotaSetFlags struct {
	requests, limits, maxima []string
	objects                  int64
	bytes                    string
	force                    bool
}

func newQuotaSetCommand(o *options) *cobra.Command {
	var f quotaSetFlags
	cmd := &cobra.Command{
		Use:   "set NAMESPACE [RESOURCE=AMOUNT|RESOURCE=none]...",
		Short: "Change a namespace's quota and limit defaults (administrators)",
		Long: "Change the given parts of a namespace's limits and keep the others. Resources: " +
			strings.Join(quota.Names, ", ") + " (cpu in cores, memory and disk in MB, gpu in cards,\n" +
			"vcuda-core in hundredths of a card, vcuda-memory in 256 MiB units, instances in task\n" +
			"groups); none removes a bound. A quota below the namespace's usage is refused\n" +
			"unless --force: nothing running is stopped, new work waits or is refused.",
		Example: "  berth quota set team-a cpu=8 memory=16384 gpu=2 instances=50\n" +
			"  berth quota set team-a --default-request cpu=0.25,memory=128 --max cpu=4\n" +
			"  berth quota set team-a cpu=4 --force",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				q, err := c.NamespaceQuota(ctx, args[0])
				if err != nil {
					return err
				}
				l, err := f.apply(q, args[1:])
				if err != nil {
					return err
				}
				if q, err = c.SetNamespaceQuota(ctx, args[0], l, f.force); err != nil {
					return err
				}
				return printQuota(o, q)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.requests, "default-request", nil, "default requests of a task that gives none, RESOURCE=AMOUNT (cpu, memory, disk; none removes one)")
	fl.StringSliceVar(&f.limits, "default-limit", nil, "default limits of a task that gives none, RESOURCE=AMOUNT")
	fl.StringSliceVar(&f.maxima, "max", nil, "the most one task may request or be limited to, RESOURCE=AMOUNT (also gpu, vcuda-core, vcuda-memory)")
	fl.Int64Var(&f.objects, "objects", -1, "how many objects the namespace may hold (0: the cluster's default)")
	fl.StringVar(&f.bytes, "bytes", "", "how many bytes of objects it may hold, with KiB, MiB or GiB (0: the default)")
	fl.BoolVar(&f.force, "force", false, "set a quota below the namespace's current usage")
	return cmd
}

// apply is the namespace's limits q changed by the command's arguments and flags.
func (f *quotaSetFlags) apply(q *client.NamespaceQuota, args []string) (client.NamespaceLimits, error) {
	l := q.Limits
	if q.Default { // the cluster's defaults: keep them as defaults, not as numbers
		l.Objects, l.Bytes = 0, 0
	}
	var err error
	if l.Resources, err = setAmounts(l.Resources, args, "RESOURCE=AMOUNT"); err != nil {
		return l, err
	}
	d := quota.Defaults{}
	if l.LimitDefaults != nil {
		d = *l.LimitDefaults
	}
	for _, s := range []struct {
		dst  *quota.List
		args []string
		name string
	}{{&d.Requests, f.requests, "--default-request"}, {&d.Limits, f.limits, "--default-limit"}, {&d.Max, f.maxima, "--max"}} {
		if *s.dst, err = setAmounts(*s.dst, s.args, s.name); err != nil {
			return l, err
		}
	}
	l.LimitDefaults = &d
	if d.IsZero() {
		l.LimitDefaults = nil
	}
	if f.objects >= 0 {
		l.Objects = f.objects
	}
	if f.bytes != "" {
		if l.Bytes, err = parseBytes(f.bytes); err != nil {
			return l, fmt.Errorf("--bytes %q: %w", f.bytes, err)
		}
	}
	return l, nil
}

// setAmounts applies RESOURCE=AMOUNT (or RESOURCE=none, which removes it) to a copy of l.
func setAmounts(l quota.List, args []string, what string) (quota.List, error) {
	out := quota.List{}
	for k, v := range l {
		out[k] = v
	}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return nil, fmt.Errorf("%s: %q is not RESOURCE=AMOUNT", what, a)
		}
		if v == "none" {
			delete(out, k)
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: the amount is not a number", what, a)
		}
		out[k] = n
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// printQuota prints q as a table (quotas with their usage, then limit defaults), or as
// JSON or YAML with -o.
func printQuota(o *options, q *client.NamespaceQuota) error {
	format, err := parseOutput(o.output)
	if err != nil {
		return err
	}
	if format == outJSON || format == outYAML {
		return printStructured(o.out(), format, q)
	}
	return writeQuota(o.out(), q)
}

func writeQuota(w io.Writer, q *client.NamespaceQuota) error {
	storage := fmt.Sprintf("%d of %d objects, %s of %s", q.Usage.Objects, q.Limits.Objects,
		bytesize.Format(q.Usage.Bytes), bytesize.Format(q.Limits.Bytes))
	if q.Default {
		storage += " (the cluster's defaults)"
	}
	fmt.Fprintf(w, "Namespace:  %s\nStorage:    %s\n", q.Namespace, storage)
	rows := [][]string{}
	for _, k := range quota.Names {
		limit := "-"
		if v, ok := q.Limits.Resources[k]; ok {
			limit = quota.Format(k, v)
		}
		rows = append(rows, []string{"  " + k, quota.Format(k, q.ResourceUsage[k]), limit})
	}
	fmt.Fprintln(w, "Quota:")
	if err := writeTable(w, []string{"  RESOURCE", "USED", "LIMIT"}, rows); err != nil {
		return err
	}
	d := q.Limits.LimitDefaults
	if d.IsZero() {
		fmt.Fprintln(w, "Limit defaults:  none (a task without requests gets 1 cpu, 64MB memory, 64MB disk)")
		return nil
	}
	fmt.Fprintln(w, "Limit defaults (per task):")
	rows = rows[:0]
	for _, k := range quota.Names {
		if k == quota.Instances {
			continue
		}
		cell := func(l quota.List) string {
			if v, ok := l[k]; ok {
				return quota.Format(k, v)
			}
			return "-"
		}
		if r := []string{"  " + k, cell(d.Requests), cell(d.Limits), cell(d.Max)}; slices.ContainsFunc(r[1:], func(s string) bool { return s != "-" }) {
			rows = append(rows, r)
		}
	}
	return writeTable(w, []string{"  RESOURCE", "DEFAULT REQUEST", "DEFAULT LIMIT", "MAX"}, rows)
}

// isNamespaceArg reports describe's KIND for a namespace.
func isNamespaceArg(s string) bool {
	switch strings.ToLower(s) {
	case "namespace", "namespaces", "ns":
		return true
	}
	return false
}
