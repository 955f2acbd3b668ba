package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/client"
)

func newClusterCommand(o *options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the servers' etcd members and which server leads",
		Long: "Show the cluster as the server asked sees it (GET /v1/cluster): which server leads\n" +
			"the scheduler and controllers, and every etcd member with its health. It answers\n" +
			"without etcd quorum too, with the errors, to help find out why.\n\n" +
			"STATUS is healthy, or why not (unreachable, no raft leader, not started);\n" +
			"RAFT says which member is the etcd leader and which are learners (joining);\n" +
			"DB SIZE is the member's database file, which QUOTA bounds (past it etcd refuses\n" +
			"writes: see `berth cluster recover`), IN USE the part not yet free pages.",
		Example: "  berth cluster\n  berth cluster --server s1:7470,s2:7470 -o yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.withFormatAndClient(cmd, func(ctx context.Context, c *client.Client, format outputFormat) error {
				info, err := c.Cluster(ctx)
				if err != nil {
					return err
				}
				if format == outJSON || format == outYAML {
					return printStructured(o.out(), format, info)
				}
				return printCluster(o, c.Server(), info)
			})
		},
	}
	cmd.AddCommand(newClusterRecoverCommand(o))
	return cmd
}

func printCluster(o *options, server string, info *cluster.Info) error {
	w := o.out()
	leader := info.Leader
	switch {
	case info.LeaderError != "":
		leader = "unknown: " + info.LeaderError
	case leader == "":
		leader = "none (an election is under way)"
	case leader == info.Self.ID:
		leader += " (the server answering)"
	}
	fmt.Fprintf(w, "Leader:  %s\nServer:  %s at %s\nEtcd:    %s\n", leader, info.Self.ID, server, info.Etcd)
	printSpace(w, info.Space)
	if info.MembersError != "" {
		fmt.Fprintf(w, "Members: unknown: %s\n", info.MembersError)
		return nil
	}
	fmt.Fprintln(w)
	rows := make([][]string, 0, len(info.Members))
	for _, m := range info.Members {
		status := "healthy"
		if !m.Healthy {
			status = m.Error
		}
		var raft []string
		if m.RaftLeader {
			raft = append(raft, "leader")
		}
		if m.Learner {
			raft = append(raft, "learner")
		}
		name := m.Name
		if name == "" {
			name = "(not started)"
		}
		if name == info.Self.Member {
			name += "*"
		}
		rows = append(rows, []string{name, m.ID, status, orNone(strings.Join(raft, ",")),
			sizeOrNone(m.DBSize), sizeOrNone(m.DBSizeInUse), sizeOrNone(m.DBQuota),
			orNone(strings.Join(m.PeerURLs, ",")), orNone(strings.Join(m.ClientURLs, ","))})
	}
	return writeTable(w, []string{"MEMBER", "ID", "STATUS", "RAFT", "DB SIZE", "IN USE", "QUOTA", "PEER URL", "CLIENT URL"}, rows)
}
