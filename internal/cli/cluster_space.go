package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/bytesize"
	"github.com/berthhq/berth/internal/client"
)

// recoverTimeout is the least time `berth cluster recover` waits: the server
// defragments one member after the other, which takes a while on a large database.
const recoverTimeout = 10 * time.Minute

func newClusterRecoverCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Free etcd's space: compact, defragment, disarm the NOSPACE alarm",
		Long: "Free etcd's space without a restart (POST /v1/cluster/recover): the server compacts\n" +
			"etcd's whole history, defragments every etcd member it reaches, one at a time (each\n" +
			"is blocked while it is), and disarms the NOSPACE alarm once every member is back\n" +
			"under its quota. It prints each member's database before and after. When live data\n" +
			"fills the quota, delete objects or restart the servers with a larger\n" +
			"--etcd-quota-bytes first. It exits 1 when the alarm stays raised.",
		Example: "  berth cluster recover",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.timeout > 0 && o.timeout < recoverTimeout {
				o.timeout = recoverTimeout
			}
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				rec, err := c.RecoverSpace(ctx)
				if err != nil {
					return err
				}
				if format == outJSON || format == outYAML {
					err = printStructured(o.out(), format, rec)
				} else {
					err = printRecovery(o.out(), rec)
				}
				if err == nil && rec.AlarmBefore && !rec.Disarmed {
					err = errors.New(rec.Message)
				}
				return err
			})
		},
	}
}

func printRecovery(w io.Writer, rec *cluster.Recovery) error {
	if rec.CompactedTo > 0 {
		fmt.Fprintf(w, "History compacted to revision %d.\n\n", rec.CompactedTo)
	} else {
		fmt.Fprintf(w, "Nothing to compact.\n\n")
	}
	rows := make([][]string, 0, len(rec.Members))
	for _, m := range rec.Members {
		done := "defragmented"
		switch {
		case m.Error != "":
			done = m.Error
		case !m.Defragmented:
			done = "not defragmented"
		}
		rows = append(rows, []string{orNone(m.Name), sizeOrNone(m.SizeBefore), sizeOrNone(m.InUseBefore),
			sizeOrNone(m.SizeAfter), sizeOrNone(m.InUseAfter), sizeOrNone(m.Quota), done})
	}
	if err := writeTable(w, []string{"MEMBER", "SIZE BEFORE", "IN USE BEFORE", "SIZE AFTER", "IN USE AFTER", "QUOTA", "RESULT"}, rows); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", rec.Message)
	return nil
}

// printSpace writes the Space line of `berth cluster`: the alarms, what to do, the last
// compaction.
func printSpace(w io.Writer, sp cluster.Space) {
	var other []string
	for _, a := range sp.Alarms {
		if a.Type != "NOSPACE" {
			other = append(other, a.Type+" on member "+a.Member)
		}
	}
	switch {
	case sp.AlarmsError != "":
		fmt.Fprintf(w, "Space:   unknown: %s\n", sp.AlarmsError)
	case sp.NoSpace:
		fmt.Fprintf(w, "Space:   FULL (NOSPACE alarm): etcd refuses writes\n         %s\n", sp.Advice)
	case sp.LastCompaction != nil:
		fmt.Fprintf(w, "Space:   ok; history compacted to revision %d at %s\n", sp.LastCompaction.Revision,
			sp.LastCompaction.Time.Local().Format(time.DateTime))
	default:
		fmt.Fprintln(w, "Space:   ok; no compaction yet")
	}
	if len(other) > 0 {
		fmt.Fprintf(w, "Alarms:  %s\n", strings.Join(other, ", "))
	}
}

// sizeOrNone shows a byte count, <none> for 0 (not reported).
func sizeOrNone(n int64) string {
	if n == 0 {
		return orNone("")
	}
	return strings.ReplaceAll(bytesize.Format(n), " ", "")
}
