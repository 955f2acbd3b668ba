package executor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/instvol"
)

// prepared is every task of a pod as the drivers will get it. The env is kept in parts
// because a container's BCS_CONTAINER_IP is only known once the network owner runs.
type prepared struct {
	tasks []*driver.Task
	// own is each task's spec and configmap/secret env, before the injected variables.
	own [][]envVar
	// share is each task's env from its device plugins and its share of a card (the
	// node's sharing mode), set after its own so the spec cannot loosen it.
	share [][]envVar
	// ports give PORT_<name>.
	ports []v4.AllocatedPort
}

// setEnv renders task i's env with the container IP: the injected variables, then its
// own, then the one-level $VAR copy.
func (pp *prepared) setEnv(p *pod, i int, containerIP string) {
	env := append(injectedEnv(p.e.cfg.HostIP, containerIP, p.name, pp.ports), envVar{"BERTH_NODE_NAME", p.e.cfg.NodeName})
	if d := p.e.cfg.DNS; d != nil {
		env = append(env, envVar{"BERTH_DNS", d.Addr}, envVar{"BCS_DNS", d.Addr})
	}
	env = append(env, p.csiEndpoint(pp.tasks[i])...)
	env = append(env, p.plan.jobEnv...)
	env = copyVars(append(env, pp.own[i]...))
	devices := pp.share[i]
	if c := p.e.cfg.GPUs; len(pp.tasks[i].GPUs) > 0 || c != nil && c.Any() {
		devices = append(gpuEnv(pp.tasks[i].Container != nil, pp.tasks[i].GPUs), devices...)
	}
	pp.tasks[i].Env = formatEnv(withGPUEnv(env, devices))
}

// prepare creates the pod's directories and builds every driver.Task: env, files, limits,
// and for containers the request, host name and volumes (the network is decided when
// they start).
func (p *pod) prepare(ctx context.Context) (*prepared, error) {
	dirs, err := p.plan.makeDirs()
	if err != nil {
		return nil, err
	}
	data := newDataResolver(p.e.cfg.Data, p.ns, p.name)
	if err := p.prepareVolumes(ctx, data); err != nil {
		return nil, err
	}
	pp := &prepared{}
	if p.plan.net != nil {
		pp.ports = p.plan.net.portEnv
	} else {
		for _, t := range p.plan.tasks {
			pp.ports = append(pp.ports, t.ports...)
		}
	}
	for i := range p.plan.tasks {
		tp := &p.plan.tasks[i]
		t, own, err := p.buildTask(ctx, i, tp, data, dirs)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", tp.name, err)
		}
		share, err := p.shareCard(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", tp.name, err)
		}
		devEnv, err := p.pluginDevices(ctx, t, tp.resources)
		if err != nil {
			return nil, fmt.Errorf("task %s: %w", tp.name, err)
		}
		share = append(devEnv, share...)
		pp.tasks = append(pp.tasks, t)
		pp.own = append(pp.own, own)
		pp.share = append(pp.share, share)
		pp.setEnv(p, i, p.e.cfg.HostIP)
	}
	return pp, nil
}

// podDirMode is the mode of the pod's directory and of its work, run and logs
// directories: a process running as another user (the spec's user) must pass through
// them to its own work dir and log, but nobody else may list them; what is private
// inside (secret files, the work dir itself) has its own owner and mode
// (docs/process.md, "Files and permissions").
const podDirMode = 0o711

// makeDirs creates the pods directory, the pod's and its work, run and logs directories,
// and sets their mode when an earlier start (or version) created them (MkdirAll keeps an
// existing directory's mode). It returns the pod's subdirectories by name.
func (p *podPlan) makeDirs() (map[string]string, error) {
	dirs := map[string]string{}
	for _, dir := range []string{filepath.Dir(p.dir), p.dir} {
		if err := mkdirMode(dir, podDirMode); err != nil {
			return nil, err
		}
	}
	for _, d := range podSubdirs {
		dirs[d] = p.subdir(d)
		if err := mkdirMode(dirs[d], podDirMode); err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

func mkdirMode(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("create pod directory: %w", err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("pod directory: %w", err)
	}
	return nil
}

// buildTask builds task tp, the pod's i'th (containers come first), without its env,
// which it returns apart (spec env, then configmap and secret env).
func (p *pod) buildTask(ctx context.Context, i int, tp *taskPlan, data *dataResolver, dirs map[string]string) (*driver.Task, []envVar, error) {
	own, err := specEnv(tp.env(), tp.resources, p.e.log)
	if err != nil {
		return nil, nil, err
	}
	cms, secs := tp.dataRefs()
	dataEnv, files, err := data.resolve(ctx, cms, secs)
	if err != nil {
		return nil, nil, err
	}
	own = append(own, dataEnv...)
	cpu, mem, err := limits(tp.resources)
	if err != nil {
		return nil, nil, err
	}
	gpus, err := p.e.taskGPUs(tp.gpus)
	if err != nil {
		return nil, nil, err
	}
	t := &driver.Task{
		ID:          tp.id,
		Name:        tp.name,
		Labels:      tp.labels,
		Process:     tp.process,
		Container:   tp.container,
		Ports:       tp.ports,
		Files:       files,
		WorkBaseDir: dirs["work"],
		RunBaseDir:  dirs["run"],
		LogDir:      dirs["logs"],
		CPULimit:    cpu,
		MemoryLimit: mem,
		Revocable:   p.plan.revocable,
		KillGrace:   p.plan.grace,
		GPUs:        gpus,
	}
	if t.CPURequest, err = cpuRequest(tp.resources); err != nil {
		return nil, nil, err
	}
	if tp.container != nil {
		t.Setup = &driver.ContainerSetup{Runtime: p.plan.runtime}
		if t.Setup.Volumes, err = p.volumes(i, tp.container); err != nil {
			return nil, nil, err
		}
		t.Setup.DNS = p.containerDNS()
		if t.Setup.PullAuth, err = data.pullAuth(ctx, tp.container); err != nil {
			return nil, nil, err
		}
		t.Setup.PullProgress = p.pullReporter(i)
	}
	if tp.process != nil {
		if t.Links, err = p.processLinks(tp.process); err != nil {
			return nil, nil, err
		}
	}
	return t, own, nil
}

// cpuRequest is requests.cpu in cores (cpu-shares = request x 1024); without a request
// the limit counts, as BCS copies limits into empty requests.
func cpuRequest(r *v4.Resources) (float64, error) {
	if r == nil {
		return 0, nil
	}
	var q v4.Quantity
	if r.Requests != nil {
		q = r.Requests.CPU
	}
	if q == "" && r.Limits != nil {
		q = r.Limits.CPU
	}
	f, err := quantity(q)
	if err != nil {
		return 0, fmt.Errorf("requests.cpu: %w", err)
	}
	return max(0, f), nil
}

// volumes are the mounts of the pod's i'th container (docs/agent.md, Container pods):
// "$BCS_POD_ID" in a host path is the task group's name; an empty host path is a
// directory of the pod, storage/<mountPath>, created here so it belongs to the pod and
// goes with it; an instance volume is the directory the node keeps for the instance and
// container (docs/agent.md, "Instance volumes"), which outlives the pod.
func (p *pod) volumes(i int, c *v4.Container) ([]driver.Mount, error) {
	out := make([]driver.Mount, 0, len(c.Volumes))
	for _, v := range c.Volumes {
		host := strings.ReplaceAll(v.Volume.HostPath, "$BCS_POD_ID", p.name)
		readOnly := v.Volume.ReadOnly
		switch {
		case v.Volume.PodVolume != "":
			pv := p.plan.podVolume(v.Volume.PodVolume)
			if pv == nil {
				return nil, fmt.Errorf("volume %s: the pod has no volume %q", v.Volume.MountPath, v.Volume.PodVolume)
			}
			var err error
			if host, err = p.volumeHostDir(pv); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Volume.MountPath, err)
			}
			// A configMap's or secret's files are the agent's to write (refresh.go).
			readOnly = readOnly || pv.ConfigMap != nil || pv.Secret != nil || pv.FlexVolume != nil && pv.FlexVolume.ReadOnly ||
				pv.CSI != nil && pv.CSI.ReadOnly
		case v.Volume.Instance:
			iv := p.e.cfg.InstanceVolumes
			if iv == nil {
				return nil, fmt.Errorf("volume %s: this node keeps no instance volumes", v.Volume.MountPath)
			}
			var err error
			if host, err = iv.Mount(p.plan.instance, podKey(p.ns, p.name), i, v.Volume.MountPath, containerOwner(c)); err != nil {
				return nil, err
			}
		case host == "":
			host = filepath.Join(p.plan.dir, "storage", filepath.Clean("/"+v.Volume.MountPath))
			if err := os.MkdirAll(host, 0o755); err != nil {
				return nil, fmt.Errorf("volume %s: %w", v.Volume.MountPath, err)
			}
		}
		out = append(out, driver.Mount{HostPath: host, ContainerPath: v.Volume.MountPath, ReadOnly: readOnly})
	}
	extra, err := p.csiPluginMounts()
	return append(out, extra...), err
}

// containerOwner is the owner of the container's instance volumes: the uid (and gid) of
// its docker parameter user when numeric; otherwise the agent cannot know the image's
// user (instvol.Owner).
func containerOwner(c *v4.Container) instvol.Owner {
	var user string
	for _, prm := range c.Parameters {
		if prm.Key == "user" {
			user = strings.TrimSpace(prm.Value)
		}
	}
	u, g, hasGroup := strings.Cut(user, ":")
	uid, err := strconv.ParseUint(u, 10, 31)
	if err != nil {
		return instvol.Owner{}
	}
	gid := uid
	if hasGroup {
		if gid, err = strconv.ParseUint(g, 10, 31); err != nil {
			return instvol.Owner{}
		}
	}
	return instvol.Owner{UID: int(uid), GID: int(gid), Known: true}
}
