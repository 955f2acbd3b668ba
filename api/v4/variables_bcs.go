package v4

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// BCS's application variables, ${bcs.NAME}, in a container's command, args, working
// directory and environment (names and values). Only the bcs. prefix is read: a
// container's command may hold shell variables of its own (${HOME}). BCS rendered them
// before random ports were chosen, so ${bcs.ports.NAME} was 0 for a random port; berth
// renders them once the ports are allocated (docs/compat.md, "Variables").
const bcsVarPrefix = "bcs."

// Container variable names, after the prefix.
const (
	BCSVarNamespace     = "namespace"
	BCSVarAppName       = "appname"
	BCSVarInstanceID    = "instanceid"
	BCSVarHostIP        = "hostip"
	BCSVarTaskGroupID   = "taskgroupid"
	BCSVarTaskGroupName = "taskgroupname"
)

var bcsVariables = []string{BCSVarNamespace, BCSVarAppName, BCSVarInstanceID, BCSVarHostIP, BCSVarTaskGroupID, BCSVarTaskGroupName}

// containerStrings calls fn with the path and a pointer to each string of c that may
// hold ${bcs.*} variables.
func containerStrings(p string, c *Container, fn func(path string, s *string)) {
	fn(p+".command", &c.Command)
	for i := range c.Args {
		fn(fmt.Sprintf("%s.args[%d]", p, i), &c.Args[i])
	}
	fn(p+".workingDir", &c.WorkingDir)
	for i := range c.Env {
		fn(fmt.Sprintf("%s.env[%d].name", p, i), &c.Env[i].Name)
		fn(fmt.Sprintf("%s.env[%d].value", p, i), &c.Env[i].Value)
	}
	// Where configmap and secret items go (a file's path, a variable's name), as BCS
	// rendered the destinations of a process's messages.
	for i := range c.ConfigMaps {
		for j := range c.ConfigMaps[i].Items {
			fn(fmt.Sprintf("%s.configmaps[%d].items[%d].keyOrPath", p, i, j), &c.ConfigMaps[i].Items[j].KeyOrPath)
		}
	}
	for i := range c.Secrets {
		for j := range c.Secrets[i].Items {
			fn(fmt.Sprintf("%s.secrets[%d].items[%d].keyOrPath", p, i, j), &c.Secrets[i].Items[j].KeyOrPath)
		}
	}
}

// bcsRefs lists the ${bcs.*} references of s; other ${...} are the container's own.
// An unterminated "${bcs." is an error.
func bcsRefs(s string) ([]variableRef, error) {
	var out []variableRef
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "${"+bcsVarPrefix)
		if j < 0 {
			break
		}
		start := i + j
		k := strings.IndexByte(s[start:], '}')
		if k < 0 {
			return out, fmt.Errorf("unterminated variable %q: missing '}'", truncate(s[start:], 40))
		}
		out = append(out, variableRef{name: s[start+2 : start+k], start: start, end: start + k + 1})
		i = start + k + 1
	}
	return out, nil
}

// checkContainerVariables reports unknown ${bcs.*} variables, and ports the container
// does not declare, with the closest known name as a suggestion.
func checkContainerVariables(p string, c *Container, errs *FieldErrors) {
	var portNames []string
	for _, port := range c.Ports {
		portNames = append(portNames, port.Name)
	}
	slices.Sort(portNames)
	known := slices.Clone(bcsVariables)
	for _, n := range portNames {
		known = append(known, varPortsPrefix+n)
	}
	containerStrings(p, c, func(fp string, s *string) {
		refs, err := bcsRefs(*s)
		if err != nil {
			errs.add(fp, "%v", err)
		}
		for _, r := range refs {
			name := strings.TrimPrefix(r.name, bcsVarPrefix)
			if port, ok := strings.CutPrefix(name, varPortsPrefix); ok {
				if !slices.Contains(portNames, port) {
					errs.add(fp, "${%s}: port %q is not declared in this container's ports", truncate(r.name, 60), truncate(port, 40))
				}
				continue
			}
			if slices.Contains(bcsVariables, name) {
				continue
			}
			msg := fmt.Sprintf("unknown variable ${%s}", truncate(r.name, 60))
			if s := closest(name, known); s != "" {
				msg += fmt.Sprintf(" (did you mean ${%s%s}?)", bcsVarPrefix, s)
			}
			errs.add(fp, "%s; known: bcs.%s, bcs.ports.<name>", msg, strings.Join(bcsVariables, ", bcs."))
		}
	})
}

// ContainerVariables are the values of the ${bcs.*} variables for one container of one
// instance.
type ContainerVariables struct {
	Namespace     string
	AppName       string
	InstanceID    int
	HostIP        string
	TaskGroupID   string         // the task group's name, BCS's taskgroup ID form
	TaskGroupName string         // APP-INDEX, as BCS named it
	Ports         map[string]int // port name -> the host port allocated to it, else its container port
}

// RenderContainer returns a copy of c with every ${bcs.*} variable replaced.
func (vars ContainerVariables) RenderContainer(c Container) (Container, error) {
	out := c
	out.Args = slices.Clone(c.Args)
	out.Env = slices.Clone(c.Env)
	out.ConfigMaps = slices.Clone(c.ConfigMaps)
	for i := range out.ConfigMaps {
		out.ConfigMaps[i].Items = slices.Clone(out.ConfigMaps[i].Items)
	}
	out.Secrets = slices.Clone(c.Secrets)
	for i := range out.Secrets {
		out.Secrets[i].Items = slices.Clone(out.Secrets[i].Items)
	}
	var firstErr error
	containerStrings("", &out, func(p string, s *string) {
		r, err := vars.render(*s)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", strings.TrimPrefix(p, "."), err)
		}
		*s = r
	})
	return out, firstErr
}

// render replaces the ${bcs.*} references of s.
func (vars ContainerVariables) render(s string) (string, error) {
	refs, err := bcsRefs(s)
	if err != nil {
		return s, err
	}
	return replaceRefs(s, refs, func(name string) (string, bool) { return vars.value(strings.TrimPrefix(name, bcsVarPrefix)) })
}

func (vars ContainerVariables) value(name string) (string, bool) {
	switch name {
	case BCSVarNamespace:
		return vars.Namespace, true
	case BCSVarAppName:
		return vars.AppName, true
	case BCSVarInstanceID:
		return strconv.Itoa(vars.InstanceID), true
	case BCSVarHostIP:
		return vars.HostIP, true
	case BCSVarTaskGroupID:
		return vars.TaskGroupID, true
	case BCSVarTaskGroupName:
		return vars.TaskGroupName, true
	}
	if port, ok := strings.CutPrefix(name, varPortsPrefix); ok {
		if n, ok := vars.Ports[port]; ok {
			return strconv.Itoa(n), true
		}
	}
	return "", false
}
