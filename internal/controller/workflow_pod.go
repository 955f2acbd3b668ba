package controller

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/workflow/engine"
)

// A workflow step's pod: the template's container, process or script as the one main
// task, and the StepIO telling the agent what to stage and collect (api/v4/workflow_stepio.go).

// Where a script's source is staged: in a container's filesystem, or under a process
// task's work directory (the agent takes a process task's paths as relative to it, and
// the process starts there).
const (
	scriptPathContainer = "/tmp/berth-script"
	scriptPathProcess   = "/berth-script"
	stepMainTask        = "main"
	logsArtifact        = "main-logs"
)

// stepTaskGroupName is the task group of a Pod node: derived from the node's ID, so a
// leader that takes over finds the one its predecessor created (and creating it again
// fails: the name exists); retry is the workflow's retry count, so a node reset by a
// retry gets a new task group beside its old one's record.
func stepTaskGroupName(wf string, nodeID string, retry int) string {
	if len(wf) > 40 {
		wf = wf[:40]
	}
	name := wf + "." + nodeID
	if retry > 0 {
		name += "." + strconv.Itoa(retry)
	}
	return name
}

// artifactKey is where an output artifact of a node is kept: under the workflow's own
// prefix, its UID telling it from an earlier workflow of the same name.
func artifactKey(wf *v4.Workflow, nodeID, name string) string {
	return wf.Metadata.Namespace + "/" + wf.Metadata.Name + "/" + wf.Status.UID + "/" + nodeID + "/" + name
}

// stepPod builds the pod template and StepIO of a step to start.
func stepPod(wf *v4.Workflow, st engine.Start, inputs *v4.WfInputs) (*v4.PodTemplate, *v4.StepIO, error) {
	t := st.Template
	io := &v4.StepIO{Workflow: wf.Metadata.Name, NodeID: st.NodeID,
		LogsKey: artifactKey(wf, st.NodeID, logsArtifact)}
	pod := &v4.PodTemplate{}
	switch {
	case t.Container != nil:
		c := *t.Container
		if c.Name == "" {
			c.Name = stepMainTask
		}
		pod.Spec.Containers = []v4.Container{c}
	case t.Process != nil:
		// The process keeps its procName: the agent knows a process by it (docs/process.md).
		pod.Spec.Processes = []v4.ProcessTask{*t.Process}
	case t.Script != nil:
		scriptPod(pod, io, t.Script)
	default:
		return nil, nil, fmt.Errorf("template %q runs nothing", t.Name)
	}
	io.Main = v4.TaskNames(&pod.Spec)[0]
	if inputs != nil {
		for _, a := range inputs.Artifacts {
			in, err := stepInputOf(wf, a)
			if err != nil {
				return nil, nil, err
			}
			io.Inputs = append(io.Inputs, in)
		}
	}
	if err := stepOutputs(wf, st, io); err != nil {
		return nil, nil, err
	}
	return pod, io, nil
}

// scriptPod runs a script: its source staged as a raw input, run by the interpreter
// command with the staged file appended; in a container of the script's image, or as a
// process task on the node when it has none.
func scriptPod(pod *v4.PodTemplate, io *v4.StepIO, s *v4.WfScript) {
	src := s.Source
	if s.Image == "" {
		name := stepMainTask
		if len(s.Command) > 0 && path.Base(s.Command[0]) != "." && path.Base(s.Command[0]) != "/" {
			name = path.Base(s.Command[0]) // the interpreter's process, as the agent sees it
		}
		pod.Spec.Processes = []v4.ProcessTask{{ProcName: name, StartCmd: shellJoin(append(slices.Clone(s.Command), "."+scriptPathProcess)),
			Env: s.Env, Resources: s.Resources}}
		io.Inputs = append(io.Inputs, v4.StepInput{Name: "script", Path: scriptPathProcess, Mode: 0o755, Raw: &src})
	} else {
		c := v4.Container{Name: stepMainTask, Image: s.Image, Env: s.Env, Resources: s.Resources}
		if len(s.Command) > 0 {
			c.Command, c.Args = s.Command[0], append(append([]string{}, s.Command[1:]...), scriptPathContainer)
		}
		pod.Spec.Containers = []v4.Container{c}
		io.Inputs = append(io.Inputs, v4.StepInput{Name: "script", Path: scriptPathContainer, Mode: 0o755, Raw: &src})
	}
	io.Result = true
}

// shellJoin quotes words for the process task's start command.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// stepInputOf is one input artifact as the agent stages it: from another node's output
// (the key the controller gave that output), or raw, http or git.
func stepInputOf(wf *v4.Workflow, a v4.WfArtifact) (v4.StepInput, error) {
	in := v4.StepInput{Name: a.Name, Path: a.Path, Mode: a.Mode, Optional: a.Optional}
	if a.Repository != nil {
		in.Repository = a.Repository.Name
	}
	switch {
	case a.Raw != nil:
		data := a.Raw.Data
		in.Raw = &data
	case a.HTTP != nil:
		in.HTTP = a.HTTP
	case a.Git != nil:
		in.Git = a.Git
	case a.From != "":
		node, name, ok := strings.Cut(a.From, "/")
		if !ok || !isNodeID(node) || !keySegment(name) {
			return in, fmt.Errorf("input artifact %q: from %q names no node's output", a.Name, a.From)
		}
		in.Key = artifactKey(wf, node, name)
	case a.Repository != nil && a.Repository.Key != "":
		in.Key = a.Repository.Key
	case a.Optional:
		// No source (an optional argument whose step made nothing): the agent skips it.
	default:
		return in, fmt.Errorf("input artifact %q has no source", a.Name)
	}
	return in, nil
}

// stepOutputs fills what the agent collects: parameters from files, stdout, artifacts.
func stepOutputs(wf *v4.Workflow, st engine.Start, io *v4.StepIO) error {
	o := st.Template.Outputs
	if o == nil {
		return nil
	}
	for _, p := range o.Parameters {
		switch vf := p.ValueFrom; {
		case vf == nil:
		case vf.Path != "":
			io.Parameters = append(io.Parameters, v4.StepParameter{Name: p.Name, Path: vf.Path, Default: vf.Default})
		case vf.Stdout:
			if io.StdoutParameter != "" {
				return fmt.Errorf("output parameters %q and %q both take stdout", io.StdoutParameter, p.Name)
			}
			io.StdoutParameter = p.Name
		}
	}
	for _, a := range o.Artifacts {
		if a.Name == logsArtifact || !keySegment(a.Name) {
			return fmt.Errorf("output artifact %q: not a usable name", a.Name)
		}
		out := v4.StepOutputArtifact{Name: a.Name, Path: a.Path, Optional: a.Optional, Key: artifactKey(wf, st.NodeID, a.Name)}
		if a.Repository != nil {
			out.Repository = a.Repository.Name
		}
		io.Artifacts = append(io.Artifacts, out)
	}
	return nil
}

// isNodeID reports whether s is a node ID as the engine makes them: "n" and hex digits.
func isNodeID(s string) bool {
	if len(s) < 2 || len(s) > 64 || s[0] != 'n' {
		return false
	}
	return strings.Trim(s[1:], "0123456789abcdef") == ""
}

// keySegment reports whether s may be one segment of an artifact key: no separator,
// not "." or "..", nothing a store could read as a path.
func keySegment(s string) bool {
	return s != "" && s != "." && s != ".." && len(s) <= 253 && path.Clean(s) == s && !strings.ContainsAny(s, "/\\\x00")
}

// needsCollection reports whether the step's outcome waits for the agent's collection:
// it has outputs to take. (Logs alone do not hold the step: they are kept when the
// agent stores them.)
func needsCollection(io *v4.StepIO) bool {
	return io != nil && (len(io.Parameters) > 0 || io.Result || io.StdoutParameter != "" || len(io.Artifacts) > 0)
}
