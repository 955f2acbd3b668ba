package cli

import (
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/sim"
)

// simGPUs reads --gpus or --gpu-file: the cards every simulated node registers (none
// without either). The error names the flag.
func simGPUs(gpus, gpuFile string) ([]v4.NodeGPU, error) {
	switch {
	case gpus != "" && gpuFile != "":
		return nil, fmt.Errorf("give --gpus or --gpu-file, not both")
	case gpus != "":
		cards, err := sim.ParseGPUs(gpus)
		if err != nil {
			return nil, fmt.Errorf("--gpus %q: %w", gpus, err)
		}
		return cards, nil
	case gpuFile != "":
		cards, err := sim.ReadGPUFile(gpuFile)
		if err != nil {
			return nil, fmt.Errorf("--gpu-file %s: %w", gpuFile, err)
		}
		return cards, nil
	}
	return nil, nil
}
