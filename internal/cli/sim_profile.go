package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// startSimProfile writes the simulator's CPU profile to path until the returned stop:
// the benchmark measures the server only as far as the simulator costs less, and this
// shows where the simulator's own time goes.
func startSimProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpu-profile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
