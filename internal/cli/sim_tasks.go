package cli

import (
	"fmt"

	"github.com/berthhq/berth/internal/sim"
)

// checkTasks checks the flags of what the simulated task groups do (start delay, run
// time, exit codes), each error naming its flag, and returns the exit codes. gpus says
// whether the nodes have cards (whole agents, which take no run time).
func (f *simFlags) checkTasks(gpus bool) ([]sim.ExitCode, error) {
	for _, d := range []struct {
		flag string
		v    int64
	}{{"--min-start-delay", int64(f.minStart)}, {"--max-start-delay", int64(f.maxStart)}, {"--run-time", int64(f.runTime)}} {
		switch {
		case d.v < 0:
			return nil, fmt.Errorf("%s: it is negative", d.flag)
		case d.v > int64(sim.MaxDelay):
			return nil, fmt.Errorf("%s: at most %s", d.flag, sim.MaxDelay)
		}
	}
	if f.maxStart < f.minStart {
		return nil, fmt.Errorf("--max-start-delay %s is below --min-start-delay %s", f.maxStart, f.minStart)
	}
	if f.runTime > 0 && (f.fullAgents || f.followServices || gpus) {
		return nil, fmt.Errorf("--run-time: whole agents (--full-agents, --follow-services, --gpus) run their tasks until stopped")
	}
	if f.exitCodes == "" {
		return nil, nil
	}
	if f.runTime == 0 {
		return nil, fmt.Errorf("--exit-codes: the tasks exit only with --run-time")
	}
	codes, err := sim.ParseExitCodes(f.exitCodes)
	if err != nil {
		return nil, fmt.Errorf("--exit-codes: %w", err)
	}
	return codes, nil
}
