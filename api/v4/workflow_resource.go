package v4

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/berthhq/berth/api/v4/expr"
)

// A resource template (Argo's) has the workflow controller create, apply or delete one
// berth object of the workflow's namespace as a step, with the rights of whoever
// submitted the workflow, never the controller's (docs/workflows.md, "Resource steps").
const WfTypeResource = "Resource"

// The actions of a resource template.
const (
	WfResourceCreate = "create"
	WfResourceApply  = "apply"
	WfResourceDelete = "delete"
)

// The output parameters of a resource step: the object's name and the resourceVersion
// the write gave it (empty after a delete).
const (
	WfResourceOutName    = "name"
	WfResourceOutVersion = "resourceVersion"
)

// WfSubmitterAnnotation is set by the server on every write of a workflow to the
// identity the request authenticated as (a token's ID, "anonymous" without one); what a
// user writes there is replaced. Resource steps act with that identity's rights as they
// are when the step runs.
const WfSubmitterAnnotation = "berth.io/submitter"

// WfCreatedByStepAnnotation is set on the object a resource step creates: the workflow's
// UID and the step's node ID. A step performed again after its pass died (the object
// written, the node not yet) finds its own object by it and succeeds, instead of failing
// as the object exists.
const WfCreatedByStepAnnotation = "berth.io/created-by-step"

// WfSubmitterAnonymous is WfSubmitterAnnotation for a request without a token.
const WfSubmitterAnonymous = "anonymous"

// maxWfManifest bounds a resource template's manifest, before and after substitution.
const maxWfManifest = 256 << 10

// WfResource is a resource template: Action on the object of Manifest (one document, YAML
// or JSON, {{...}} placeholders substituted when the step runs).
type WfResource struct {
	Action   string `json:"action"`
	Manifest string `json:"manifest"`
}

// wfResourceKinds are the kinds a resource step may write: objects of one namespace that
// start nothing which could write more objects in turn (no workflows, cron objects or
// notifications), and no storage, dependencies or repositories that reach further.
var wfResourceKinds = []Kind{KindApplication, KindProcess, KindDeployment, KindDaemonset, KindService,
	KindConfigMap, KindSecret, KindJob}

// WfResourceKinds lists the kinds a resource step may write.
func WfResourceKinds() []Kind { return slices.Clone(wfResourceKinds) }

// ParseWfResource decodes a resource template's manifest, defaulted and validated as an
// apply's: exactly one object of a kind a resource step may write. An object without a
// namespace is put in ns; with ns "" it keeps the one it names (or the default).
func ParseWfResource(manifest, ns string) (Object, error) {
	if len(manifest) > maxWfManifest {
		return nil, fmt.Errorf("must be at most %d bytes, got %d", maxWfManifest, len(manifest))
	}
	raws, err := splitStream([]byte(manifest), ValidateWarn)
	if err != nil {
		return nil, err
	}
	if len(raws) != 1 {
		return nil, fmt.Errorf("must hold exactly one document, got %d", len(raws))
	}
	// The kind first: a manifest of a workflow is not decoded (its own resource
	// templates would be parsed in turn).
	kind, kerrs := documentKind(raws[0].value)
	switch {
	case kind == "":
		return nil, kerrs.bounded()
	case !slices.Contains(wfResourceKinds, kind):
		return nil, fmt.Errorf("kind %s may not be written by a resource step (allowed: %s)", kind, kindsText(wfResourceKinds))
	}
	obj, errs, _ := decodeDocument(raws[0].value, ValidateWarn, 0)
	if len(errs) > 0 {
		return nil, errs.bounded()
	}
	if _, named := lookupFoldOK(lookupFold(raws[0].value, "metadata"), "namespace"); !named && ns != "" {
		obj.GetMeta().Namespace = ns
	}
	return obj, nil
}

func kindsText(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// ParseWfResourceTemplate is ParseWfResource at admission, before the placeholders have
// values: it parses the manifest with every placeholder filled twice (with "0", then
// "1") and refuses a kind, name or namespace that depends on a placeholder, so that what
// admission judges is the object the step writes.
func ParseWfResourceTemplate(manifest, ns string) (Object, error) {
	var objs [2]Object
	for i, fill := range []string{"0", "1"} {
		s, err := expr.Substitute(manifest, maxWfManifest, func(string) (string, bool) { return fill, true })
		if err != nil {
			return nil, err
		}
		if objs[i], err = ParseWfResource(s, ns); err != nil {
			if i == 0 {
				return nil, fmt.Errorf("does not parse with its {{...}} placeholders filled: %w", err)
			}
			return nil, err
		}
	}
	a, b := objs[0], objs[1]
	if a.GetKind() != b.GetKind() || a.GetMeta().Name != b.GetMeta().Name || a.GetMeta().Namespace != b.GetMeta().Namespace {
		return nil, errors.New("the object's kind, name and namespace must not come from {{...}} placeholders")
	}
	return a, nil
}

func validateWfResource(p string, r *WfResource, errs *FieldErrors) {
	oneOf(p+".action", r.Action, errs, WfResourceCreate, WfResourceApply, WfResourceDelete)
	if r.Manifest == "" {
		errs.add(p+".manifest", "required: one berth object, YAML or JSON")
		return
	}
	if _, err := ParseWfResourceTemplate(r.Manifest, ""); err != nil {
		errs.add(p+".manifest", "%s", truncate(err.Error(), 1000))
	}
}

// resource checks a resource template: its action and manifest, the placeholders in the
// manifest (which see the template's inputs), and no outputs or input artifacts of its
// own (a resource step runs no task: its outputs are the object's name and version).
func (g *wfGraph) resource(p string, t *WfTemplate, sc *refScope) {
	validateWfResource(p+".resource", t.Resource, g.errs)
	sc.checkJSON(p+".resource", t.Resource)
	if t.Outputs != nil {
		g.errs.add(p+".outputs", "a resource template's outputs are the parameters %s and %s, not declared", WfResourceOutName, WfResourceOutVersion)
	}
	if t.Inputs != nil && len(t.Inputs.Artifacts) > 0 {
		g.errs.add(p+".inputs.artifacts", "a resource template runs no task to stage artifacts in")
	}
}
