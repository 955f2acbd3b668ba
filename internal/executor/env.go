package executor

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// envVar is one NAME=value of a task's environment, kept apart until the end so the
// $VAR copy can look names up.
type envVar struct{ name, value string }

// injectedEnv is what the executor injects before the spec's env (docs/agent.md,
// Container pods): PORT_<name> for every port of the pod, the node IP, the pod
// ID (the task group name) and the container IP. Processes and the first container of a
// CNM pod (whose IP is known only once it runs) get the node IP as BCS's CNM code does;
// the containers that join it, and every container of a CNI pod, get the pod's IP. HOST
// (documented by BCS, never set by its code) gets the same, so the documented `$HOST`
// copy works.
func injectedEnv(hostIP, containerIP, podID string, ports []v4.AllocatedPort) []envVar {
	env := make([]envVar, 0, len(ports)+4)
	for _, p := range ports {
		env = append(env, envVar{"PORT_" + p.Name, strconv.Itoa(p.HostPort)})
	}
	return append(env,
		envVar{"BCS_NODE_IP", hostIP},
		envVar{"BCS_POD_ID", podID},
		envVar{"BCS_CONTAINER_IP", containerIP},
		envVar{"HOST", containerIP},
	)
}

// jobEnv is what a run of a job is told of it (docs/jobs.md): the job's name, and for
// an Indexed job its completion index; nothing for the task groups of other kinds.
func jobEnv(tg *v4.TaskGroup) []envVar {
	if tg.Spec.Owner.Kind != v4.KindJob {
		return nil
	}
	env := []envVar{{"BERTH_JOB_NAME", tg.Spec.Owner.Name}}
	if i := tg.Spec.JobIndex; i != nil {
		env = append(env, envVar{"BERTH_JOB_INDEX", strconv.Itoa(*i)})
	}
	return env
}

// specEnv resolves the spec's env: literal values, or valueFrom.resourceFieldRef from
// the task's resources. An unknown resource drops the variable with a warning (BCS).
func specEnv(vars []v4.EnvVar, res *v4.Resources, log *slog.Logger) ([]envVar, error) {
	env := make([]envVar, 0, len(vars))
	for _, v := range vars {
		if v.ValueFrom == nil || v.ValueFrom.ResourceFieldRef == nil {
			env = append(env, envVar{v.Name, v.Value})
			continue
		}
		ref := v.ValueFrom.ResourceFieldRef.Resource
		val, ok, err := resourceValue(res, ref)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", v.Name, err)
		}
		if !ok {
			log.Warn("env variable dropped: unknown resource", "env", v.Name, "resource", ref)
			continue
		}
		env = append(env, envVar{v.Name, val})
	}
	return env, nil
}

// resourceValue gives requests.cpu / limits.cpu in millicores formatted with %f (BCS's
// driver), and requests.memory / limits.memory in MB. A missing or unlimited (negative)
// value is 0.
func resourceValue(res *v4.Resources, ref string) (string, bool, error) {
	var list *v4.ResourceList
	kind, field, _ := strings.Cut(ref, ".")
	if res != nil {
		switch kind {
		case "requests":
			list = res.Requests
		case "limits":
			list = res.Limits
		}
	}
	if kind != "requests" && kind != "limits" || field != "cpu" && field != "memory" {
		return "", false, nil
	}
	var q v4.Quantity
	if list != nil {
		q = list.Memory
		if field == "cpu" {
			q = list.CPU
		}
	}
	f, err := quantity(q)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", ref, err)
	}
	f = max(0, f)
	if field == "cpu" {
		return fmt.Sprintf("%f", f*1000), true, nil
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true, nil
}

// copyVars applies BCS's EnvOperCopy: a value that is exactly "$NAME", where NAME is
// another variable of the list, takes that variable's value as written in the list. One
// level only: the copied value is not expanded again, and "$A$B" or "x$A" stay as they
// are. When a name appears twice, the last one counts (as in an environment).
func copyVars(env []envVar) []envVar {
	values := make(map[string]string, len(env))
	for _, v := range env {
		values[v.name] = v.value
	}
	out := make([]envVar, len(env))
	for i, v := range env {
		out[i] = v
		ref, ok := strings.CutPrefix(v.value, "$")
		if !ok || ref == v.name {
			continue
		}
		if val, ok := values[ref]; ok {
			out[i].value = val
		}
	}
	return out
}

func formatEnv(env []envVar) []string {
	out := make([]string, len(env))
	for i, v := range env {
		out[i] = v.name + "=" + v.value
	}
	return out
}
