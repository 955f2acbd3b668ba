package v4

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// The ${...} variables of process specs (docs/spec.md). They may appear in every string of a
// process task; workPath and pidFile are rendered first so the others can use them.
const (
	VarNamespace   = "namespace"
	VarProcessName = "processname"
	VarInstanceID  = "instanceid"
	VarHostIP      = "hostip"
	VarWorkBaseDir = "work_base_dir"
	VarRunBaseDir  = "run_base_dir"
	VarWorkPath    = "workPath"
	VarPidFile     = "pidFile"
	varPortsPrefix = "ports."
)

var processVariables = []string{VarNamespace, VarProcessName, VarInstanceID, VarHostIP,
	VarWorkBaseDir, VarRunBaseDir, VarWorkPath, VarPidFile}

// variableRef is one ${name} found in a string.
type variableRef struct {
	name       string
	start, end int // byte offsets of "${" and just after "}"
}

// scanVariables finds every ${name} in s; an opening "${" without "}" is an error.
func scanVariables(s string) ([]variableRef, error) {
	var refs []variableRef
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "${")
		if j < 0 {
			break
		}
		start := i + j
		k := strings.IndexByte(s[start+2:], '}')
		if k < 0 {
			return refs, fmt.Errorf("unterminated variable %q: missing '}'", truncate(s[start:], 40))
		}
		end := start + 2 + k + 1
		refs = append(refs, variableRef{name: s[start+2 : end-1], start: start, end: end})
		i = end
	}
	return refs, nil
}

// stripVariables removes ${...} references, so the rest can be checked as a URL or path.
func stripVariables(s string) string {
	refs, _ := scanVariables(s)
	for i := len(refs) - 1; i >= 0; i-- {
		s = s[:refs[i].start] + "x" + s[refs[i].end:]
	}
	return s
}

// checkProcessVariables reports unknown variables and ports that the task does not
// declare, with the closest known name as a suggestion.
func checkProcessVariables(p string, t *ProcessTask, ports map[string]bool, errs *FieldErrors) {
	portNames := make([]string, 0, len(ports))
	for n := range ports {
		portNames = append(portNames, n)
	}
	slices.Sort(portNames)
	known := slices.Clone(processVariables)
	for _, n := range portNames {
		known = append(known, varPortsPrefix+n)
	}
	eachString(p, reflect.ValueOf(t).Elem(), func(fp, s string) {
		refs, err := scanVariables(s)
		if err != nil {
			errs.add(fp, "%v", err)
		}
		for _, r := range refs {
			if msg := checkVariable(fp, r.name, ports, portNames, known); msg != "" {
				errs.add(fp, "%s", msg)
			}
		}
	})
}

func checkVariable(fieldPath, name string, ports map[string]bool, portNames, known []string) string {
	if port, ok := strings.CutPrefix(name, varPortsPrefix); ok {
		if ports[port] {
			return ""
		}
		msg := fmt.Sprintf("${%s}: port %q is not declared in this process's ports", name, port)
		if len(portNames) > 0 {
			msg += fmt.Sprintf(" (declared: %s)", strings.Join(portNames, ", "))
		}
		if s := closest(port, portNames); s != "" {
			msg += fmt.Sprintf("; did you mean ${%s%s}?", varPortsPrefix, s)
		}
		return msg
	}
	if slices.Contains(processVariables, name) {
		// workPath and pidFile are rendered first and cannot refer to themselves.
		if strings.HasSuffix(fieldPath, ".workPath") && (name == VarWorkPath || name == VarPidFile) {
			return fmt.Sprintf("${%s} cannot be used in workPath, which is rendered first", name)
		}
		if strings.HasSuffix(fieldPath, ".pidFile") && name == VarPidFile {
			return "${pidFile} cannot be used in pidFile itself"
		}
		return ""
	}
	msg := fmt.Sprintf("unknown variable ${%s}", truncate(name, 60))
	if s := closest(name, known); s != "" {
		msg += fmt.Sprintf(" (did you mean ${%s}?)", s)
	}
	return msg + fmt.Sprintf("; known: %s, ports.<name>", strings.Join(processVariables, ", "))
}

// eachString calls fn with the path and value of every string reachable from v.
func eachString(p string, v reflect.Value, fn func(path, s string)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			eachString(p, v.Elem(), fn)
		}
	case reflect.Struct:
		info := infoOf(v.Type())
		for _, f := range info.fields {
			eachString(p+"."+f.name, v.FieldByIndex(f.index), fn)
		}
	case reflect.Slice:
		for i := range v.Len() {
			eachString(fmt.Sprintf("%s[%d]", p, i), v.Index(i), fn)
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			eachString(joinKey(p, k.String()), v.MapIndex(k), fn)
		}
	case reflect.String:
		fn(p, v.String())
	}
}

// Variables are the values of the ${...} variables for one process task instance.
type Variables struct {
	Namespace   string
	ProcessName string
	InstanceID  int
	HostIP      string
	Ports       map[string]int // port name -> the port allocated to it
	WorkBaseDir string
	RunBaseDir  string
}

// RenderProcess returns a copy of t with every ${...} replaced: workPath first, then
// pidFile (which may use ${workPath}), then every other string, map values included.
// ${workPath} is the directory the task runs in: the rendered workPath, or WorkBaseDir
// when workPath is empty, as the process driver then runs the task there
// (docs/process.md). The returned workPath itself stays empty in that case.
func (vars Variables) RenderProcess(t ProcessTask) (ProcessTask, error) {
	out, err := deepCopyTask(t)
	if err != nil {
		return ProcessTask{}, err
	}
	lookup := vars.lookup("", "")
	if out.WorkPath, err = RenderString(out.WorkPath, lookup); err != nil {
		return ProcessTask{}, fmt.Errorf("workPath: %w", err)
	}
	workDir := out.WorkPath
	if workDir == "" {
		workDir = vars.WorkBaseDir
	}
	if out.PidFile, err = RenderString(out.PidFile, vars.lookup(workDir, "")); err != nil {
		return ProcessTask{}, fmt.Errorf("pidFile: %w", err)
	}
	lookup = vars.lookup(workDir, out.PidFile)
	var firstErr error
	renderStrings("", reflect.ValueOf(&out).Elem(), func(p, s string) string {
		r, err := RenderString(s, lookup)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", strings.TrimPrefix(p, "."), err)
		}
		return r
	})
	if firstErr != nil {
		return ProcessTask{}, firstErr
	}
	return out, nil
}

func (vars Variables) lookup(workPath, pidFile string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch name {
		case VarNamespace:
			return vars.Namespace, true
		case VarProcessName:
			return vars.ProcessName, true
		case VarInstanceID:
			return strconv.Itoa(vars.InstanceID), true
		case VarHostIP:
			return vars.HostIP, true
		case VarWorkBaseDir:
			return vars.WorkBaseDir, true
		case VarRunBaseDir:
			return vars.RunBaseDir, true
		case VarWorkPath:
			return workPath, true
		case VarPidFile:
			return pidFile, true
		}
		if port, ok := strings.CutPrefix(name, varPortsPrefix); ok {
			if n, ok := vars.Ports[port]; ok {
				return strconv.Itoa(n), true
			}
		}
		return "", false
	}
}

// RenderString replaces every ${name} in s with lookup(name). The replacement text is not
// scanned again, so a value containing "${" stays as it is.
func RenderString(s string, lookup func(string) (string, bool)) (string, error) {
	refs, err := scanVariables(s)
	if err != nil {
		return "", err
	}
	return replaceRefs(s, refs, lookup)
}

// replaceRefs replaces refs (found in s, in order) with lookup's values.
func replaceRefs(s string, refs []variableRef, lookup func(string) (string, bool)) (string, error) {
	if len(refs) == 0 {
		return s, nil
	}
	var b strings.Builder
	last := 0
	for _, r := range refs {
		v, ok := lookup(r.name)
		if !ok {
			return "", fmt.Errorf("unknown variable ${%s}", r.name)
		}
		b.WriteString(s[last:r.start])
		b.WriteString(v)
		last = r.end
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// renderStrings replaces every string reachable from v (settable) with fn's result.
func renderStrings(p string, v reflect.Value, fn func(path, s string) string) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			renderStrings(p, v.Elem(), fn)
		}
	case reflect.Struct:
		for _, f := range infoOf(v.Type()).fields {
			renderStrings(p+"."+f.name, v.FieldByIndex(f.index), fn)
		}
	case reflect.Slice:
		for i := range v.Len() {
			renderStrings(fmt.Sprintf("%s[%d]", p, i), v.Index(i), fn)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.String {
			for _, k := range v.MapKeys() {
				v.SetMapIndex(k, reflect.ValueOf(fn(joinKey(p, k.String()), v.MapIndex(k).String())).Convert(v.Type().Elem()))
			}
		}
	case reflect.String:
		v.SetString(fn(p, v.String()))
	}
}

func deepCopyTask(t ProcessTask) (ProcessTask, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return ProcessTask{}, fmt.Errorf("copy process task: %w", err)
	}
	var out ProcessTask
	if err := json.Unmarshal(b, &out); err != nil {
		return ProcessTask{}, fmt.Errorf("copy process task: %w", err)
	}
	return out, nil
}
