package driver

import v4 "github.com/berthhq/berth/api/v4"

// The kinds of drivers: the names the executor finds its drivers under (Driver.Name).
const (
	KindProcess = "process" // plain processes (internal/driver/process)
	// KindDocker is the container slot: Docker containers (internal/driver/docker) or,
	// with the agent's --container-runtime containerd, containerd's (internal/driver/containerd).
	KindDocker = "docker"
)

// KindOf is the kind of driver that runs a pod template's tasks: processes when it has
// any (validation refuses a template with both), else containers.
func KindOf(spec *v4.PodSpec) string {
	if len(spec.Processes) > 0 {
		return KindProcess
	}
	return KindDocker
}
