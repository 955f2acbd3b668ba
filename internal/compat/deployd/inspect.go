package deployd

import (
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// deployd answered each container's Runtime with Swarm's `docker inspect` of it, and
// Lain's console reads Runtime.Name and Runtime.State.Running from it. berth does not
// keep the inspect: the agent reports a container's state in its task status, which is
// rebuilt here into the keys of docker inspect that hold it. What berth does not report
// (the container's config, mounts, host config) is left out, not made up.

// ContainerRuntime is the part of `docker inspect` deployd's clients read.
type ContainerRuntime struct {
	Id              string
	Name            string // "/" and the container's name, as docker wrote it
	State           ContainerState
	Config          RuntimeConfig
	NetworkSettings NetworkSettings
	Node            RuntimeNode // Swarm's node of the container
}

// ContainerState is docker inspect's State.
type ContainerState struct {
	Status     string // created, running, paused, restarting, exited, dead
	Running    bool
	Paused     bool
	Restarting bool
	OOMKilled  bool
	Dead       bool
	Pid        int
	ExitCode   int
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
}

// RuntimeConfig is docker inspect's Config: the image the container runs.
type RuntimeConfig struct {
	Image string
}

// NetworkSettings is docker inspect's NetworkSettings: the container's address.
type NetworkSettings struct {
	IPAddress string
}

// RuntimeNode is the node Swarm's inspect named.
type RuntimeNode struct {
	Name string
	IP   string
}

// runtimeOf is a task's runtime view, nil while the agent has not reported a container
// (deployd's Runtime was empty until its container was created).
func runtimeOf(tg *v4.TaskGroup, ts v4.TaskStatus, image string) *ContainerRuntime {
	info := ts.Info
	if info.ID == "" && info.Status == "" {
		return nil
	}
	status := info.Status
	if status == "" { // a driver that reports no docker status: the task's phase says
		status = "exited"
		if ts.Status == v4.StatusRunning {
			status = "running"
		}
	}
	name := info.Name
	if name == "" {
		name = ts.Name
	}
	rt := &ContainerRuntime{Id: info.ID, Name: "/" + strings.TrimPrefix(name, "/"),
		Config: RuntimeConfig{Image: image}, NetworkSettings: NetworkSettings{IPAddress: info.IPAddress},
		Node: RuntimeNode{Name: tg.Spec.Node, IP: tg.Status.HostIP}}
	rt.State = ContainerState{Status: status, Running: status == "running" || status == "paused", Paused: status == "paused",
		Restarting: status == "restarting", Dead: status == "dead", OOMKilled: info.OOMKilled, Pid: info.Pid,
		ExitCode: info.ExitCode, Error: info.Message, StartedAt: info.StartAt, FinishedAt: info.FinishAt}
	if !rt.State.Running {
		rt.State.Pid = 0 // docker reports no pid for a container that is not running
	}
	return rt
}
