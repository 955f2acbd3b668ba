package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/berthhq/berth/internal/agent"
	"github.com/berthhq/berth/internal/driver/process"
)

// agentGuardFlags are what a node's operator allows workloads, for `berth agent` and the
// agent of `berth dev` (docs/agent.md, "Workload privilege").
type agentGuardFlags struct {
	allowPrivileged bool
	hostVolumes     []string
	secProfiles     []string // --security-profiles: NAME=FILE
	defaultUser     string
	taskUIDRange    string
	taskUsers       []string
	forbiddenGroups []string
	// The policy of workflow steps' http and git inputs.
	stepFetchAllow   []string
	stepGitProtocols []string
}

func (f *agentGuardFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.allowPrivileged, "allow-privileged", false,
		"run workloads that need privileges (privileged containers, host namespaces, cap-add, devices, unconfined and other security profiles, sysctl, cgroup-parent, log drivers, OOM scores, ulimits above the agent's own, other docker parameters, root processes) once a policy admitted them")
	fl.StringSliceVar(&f.hostVolumes, "host-volumes", nil,
		"host directories workloads may use as volumes, work dirs or file paths: DIR or DIR:ro, comma list (default: none)")
	fl.StringSliceVar(&f.secProfiles, "security-profiles", nil,
		"seccomp profiles workloads may name (security-opt seccomp=NAME): NAME=FILE, FILE a profile in Docker's JSON, comma list (default: none)")
	fl.StringVar(&f.defaultUser, "default-user", "",
		"user of processes whose spec names none (default: a uid of each task group's own from --task-uid-range, for an agent running as root)")
	first, last := process.DefaultUIDRange.First, process.DefaultUIDRange.Last
	fl.StringVar(&f.taskUIDRange, "task-uid-range", "",
		fmt.Sprintf("uids given to task groups whose processes name no user, FIRST-LAST (default %d-%d)", first, last))
	fl.StringSliceVar(&f.taskUsers, "task-users", nil,
		"node accounts a process spec's user may name, comma list of names or uids (default: none; root is the root privilege's, with --allow-privileged)")
	fl.StringSliceVar(&f.forbiddenGroups, "forbidden-task-groups", nil,
		"groups whose members never run tasks (default "+strings.Join(agent.DefaultForbiddenGroups, ",")+"; gid 0 always)")
	fl.StringSliceVar(&f.stepFetchAllow, "step-fetch-allow", nil,
		"networks (CIDRs or addresses, comma list) workflow steps' http and git inputs may reach although refused by default: loopback, link-local, multicast and the node's own addresses (default: none)")
	fl.StringSliceVar(&f.stepGitProtocols, "step-git-protocols", nil,
		"git transports workflow steps' git inputs may use besides https: http, git, ssh, comma list (default: none)")
}

// apply sets the guard of an agent config.
func (f *agentGuardFlags) apply(cfg *agent.Config) {
	cfg.AllowPrivileged, cfg.HostVolumes, cfg.DefaultUser = f.allowPrivileged, f.hostVolumes, f.defaultUser
	cfg.SecurityProfiles = f.secProfiles
	cfg.TaskUIDRange, cfg.TaskUsers, cfg.ForbiddenTaskGroups = f.taskUIDRange, f.taskUsers, f.forbiddenGroups
	cfg.StepFetchAllow, cfg.StepGitProtocols = f.stepFetchAllow, f.stepGitProtocols
}
