package server

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
)

// workloadKinds are the kinds whose instances a service can select.
var workloadKinds = []v4.Kind{v4.KindApplication, v4.KindProcess, v4.KindDeployment, v4.KindDaemonset}

// checkServicePorts refuses a service (422) whose port, mapped by name (no targetPort),
// names no port of the workloads its selector matches, stored or in the same request
// (docs, the rest of an apply stream): a typo would leave every instance without that
// port, not ready, and nothing would say why. A selector that matches no workload yet is
// accepted: the workload may come later (the service controller then warns NoEndpoints).
//
// seen holds the workloads of the namespaces read for earlier services of the same
// request (nil: none), so an apply stream of many services reads each namespace once.
func (s *Server) checkServicePorts(ctx context.Context, svc *v4.Service, docs []v4.Document, seen map[string]map[string]v4.Object) error {
	ns := svc.Metadata.Namespace
	workloads, ok := seen[ns]
	if !ok {
		var err error
		if workloads, err = s.workloadsOf(ctx, ns, docs); err != nil {
			return err
		}
		if seen != nil {
			seen[ns] = workloads
		}
	}
	var matched []string
	ports := map[string]bool{}
	for key, o := range workloads {
		tmpl := v4.TemplateOf(o)
		if tmpl == nil || !v4.Selects(svc.Spec.Selector, v4.InstanceLabels(o.GetMeta(), tmpl)) {
			continue
		}
		matched = append(matched, key)
		for _, n := range v4.PortNames(&tmpl.Spec) {
			ports[n] = true
		}
	}
	if len(matched) == 0 {
		return nil
	}
	slices.Sort(matched)
	var fe v4.FieldErrors
	for i, sp := range svc.Spec.Ports {
		if sp.TargetPort > 0 || ports[sp.Name] {
			continue
		}
		have := strings.Join(slices.Sorted(maps.Keys(ports)), ", ")
		if have == "" {
			have = "none"
		}
		fe = append(fe, v4.FieldError{Field: fmt.Sprintf("spec.ports[%d].name", i),
			Message: fmt.Sprintf("no port named %q in the instances the selector matches (%s), which have: %s; name one of theirs or give a targetPort",
				sp.Name, strings.Join(matched, ", "), have)})
	}
	if len(fe) == 0 {
		return nil
	}
	ae := httpapi.Errorf(http.StatusUnprocessableEntity, "%s", httpapi.InvalidMessage("service "+ns+"/"+svc.Metadata.Name, fe))
	ae.Details = fe
	return ae
}

// workloadsOf returns the workloads of namespace ns by "kind/name": those stored, with
// those of docs (the same request) in their place.
func (s *Server) workloadsOf(ctx context.Context, ns string, docs []v4.Document) (map[string]v4.Object, error) {
	workloads := map[string]v4.Object{}
	for _, k := range workloadKinds {
		objs, _, err := s.store.List(ctx, k, ns)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			workloads[string(k)+"/"+o.GetMeta().Name] = o
		}
	}
	for _, d := range docs {
		if m := d.Object.GetMeta(); m.Namespace == ns && slices.Contains(workloadKinds, d.Object.GetKind()) {
			workloads[string(d.Object.GetKind())+"/"+m.Name] = d.Object
		}
	}
	return workloads, nil
}
