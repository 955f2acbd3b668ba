package v4

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Validate checks an object (after Default) and returns every problem found, each with
// the JSON path of its field. It does not modify the object.
func Validate(obj Object) FieldErrors {
	var errs FieldErrors
	tm := typeMetaOf(obj)
	if tm.APIVersion != APIVersion {
		errs.add("apiVersion", "must be %q, got %q", APIVersion, tm.APIVersion)
	}
	validateMeta("metadata", tm.Kind, obj.GetMeta(), &errs)
	switch o := obj.(type) {
	case *Application:
		validateWorkload(&o.Workload, KindApplication, &errs)
	case *Process:
		validateWorkload(&o.Workload, KindProcess, &errs)
	case *Deployment:
		validateDeployment(o, &errs)
	case *Daemonset:
		validatePolicies(o.RestartPolicy, o.KillPolicy, &errs)
		validateConstraint("constraint", o.Constraint, &errs)
		validatePod("spec.template.spec", &o.Spec.Template.Spec, "", o.Metadata.Name, &errs)
		validateDaemonsetScheduling(&o.Spec.Scheduling, &errs)
	case *Service:
		validateService(o, &errs)
	case *ConfigMap:
		validateConfigMap(o, &errs)
	case *Secret:
		validateSecret(o, &errs)
	case *Dependency:
		validateDependency(o, &errs)
	case *Notify:
		validateNotify(o, &errs)
	case *CSIVolume:
		validateVolume(o, &errs)
	case *Workflow:
		validateWorkflowSpec(&o.Spec, false, &errs)
	case *WorkflowTemplate:
		validateWorkflowSpec(&o.Spec, true, &errs)
	case *Job:
		validateJob(o, &errs)
	case *CronJob:
		validateCronJob(o, &errs)
	case *CronWorkflow:
		validateCronWorkflow(o, &errs)
	case *ArtifactRepository:
		validateArtifactRepository(o, &errs)
	case *Node:
		validateNode(o, &errs)
	case *TaskGroup:
		checkTaskGroupName("metadata.name", o.Metadata.Name, o.Spec.Index, &errs)
		validateTaskGroup(o, &errs)
	}
	return errs
}

var (
	namePattern      = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	labelKeyPattern  = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]*[A-Za-z0-9])?$`)
	labelValuePatter = regexp.MustCompile(`^[^\x00-\x1f]*$`)
)

// Name and label limits. 63 keeps names usable as DNS labels and in BCS's IDs.
const (
	maxNameLen       = 63
	maxLabelKeyLen   = 253
	maxLabelValueLen = 253
)

// checkName reports why s is not a valid object name (lowercase letters, digits and '-',
// starting with a letter, so never all digits; no '.', which separates parts of IDs).
func checkName(path, s string, errs *FieldErrors) {
	switch {
	case s == "":
		errs.add(path, "required")
	case len(s) > maxNameLen:
		errs.add(path, "must be at most %d characters, got %d", maxNameLen, len(s))
	case strings.Contains(s, "."):
		errs.add(path, "must not contain '.' (it separates the parts of task group IDs), got %q", s)
	case s[0] >= '0' && s[0] <= '9':
		errs.add(path, "must not start with a digit, got %q", s)
	case !namePattern.MatchString(s):
		errs.add(path, "must be lowercase letters, digits and '-', starting with a letter, got %q", truncate(s, 80))
	}
}

// dataNamePattern is the looser rule for configmap and secret names: BCS only forbade '.'
// there, and specs refer to them in mixed case ("mySecret").
var dataNamePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// checkDataName reports why s is not a valid configmap or secret name.
func checkDataName(path, s string, errs *FieldErrors) {
	switch {
	case s == "":
		errs.add(path, "required")
	case len(s) > maxNameLen:
		errs.add(path, "must be at most %d characters, got %d", maxNameLen, len(s))
	case !dataNamePattern.MatchString(s):
		errs.add(path, "must be letters, digits, '_' and '-', starting with a letter (no '.'), got %q", truncate(s, 80))
	}
}

func validateMeta(path string, kind Kind, m *ObjectMeta, errs *FieldErrors) {
	switch kind {
	case KindConfigMap, KindSecret:
		checkDataName(path+".name", m.Name, errs)
	case KindNode:
		checkHostName(path+".name", m.Name, errs)
	case KindTaskGroup: // the name is an ID checked against spec.index in Validate
	default:
		checkName(path+".name", m.Name, errs)
	}
	if !kind.Namespaced() {
		if m.Namespace != "" {
			errs.add(path+".namespace", "must be empty: %s objects are not namespaced, got %q", kind, truncate(m.Namespace, 80))
		}
	} else if m.Namespace != DefaultNamespace {
		checkName(path+".namespace", m.Namespace, errs)
	}
	validateLabels(path+".labels", m.Labels, errs)
	validateLabels(path+".annotations", m.Annotations, errs)
	if v, ok := m.Annotations[PlacementAnnotation]; ok {
		oneOf(joinKey(path+".annotations", PlacementAnnotation), v, errs, "spread", "binpack")
	}
	if v, ok := m.Annotations[StatefulAnnotation]; ok {
		oneOf(joinKey(path+".annotations", StatefulAnnotation), v, errs, "true", "false")
	}
}

// PlacementAnnotation chooses how the scheduler scores nodes for one application:
// "spread" (emptiest node first) or "binpack" (fullest node that fits).
const PlacementAnnotation = "berth.io/placement"

func validateLabels(path string, labels map[string]string, errs *FieldErrors) {
	for _, k := range sortedStringKeys(labels) {
		v := labels[k]
		kp := joinKey(path, k)
		if len(k) > maxLabelKeyLen || !labelKeyPattern.MatchString(k) {
			errs.add(kp, "key must be at most %d letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit", maxLabelKeyLen)
		}
		if len(v) > maxLabelValueLen || !labelValuePatter.MatchString(v) {
			errs.add(kp, "value must be at most %d characters without control characters", maxLabelValueLen)
		}
	}
}

// oneOf reports v unless it is one of allowed (exact, after Default normalised the case).
// A value like "Never | Always" is a template's list of choices copied verbatim; the
// message says so.
func oneOf(path, v string, errs *FieldErrors, allowed ...string) {
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	msg := fmt.Sprintf("must be one of %s, got %q", strings.Join(quoted, ", "), truncate(v, 80))
	if strings.Contains(v, "|") {
		msg += " (a list of alternatives: pick exactly one)"
	} else if s := closest(v, allowed); s != "" && v != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	errs.add(path, "%s", msg)
}

func nonNegative(path string, v int, errs *FieldErrors) {
	if v < 0 {
		errs.add(path, "must not be negative, got %d", v)
	}
}

func portInRange(path string, p int, errs *FieldErrors) {
	if p < -1 || p > 65535 {
		errs.add(path, "must be a port number 0-65535 (or -1 for none), got %d", p)
	}
}

func sortedStringKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
