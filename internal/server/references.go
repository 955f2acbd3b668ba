package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// taskRefs are the configmaps and secrets that one task of a pod names, at path.
type taskRefs struct {
	path        string
	configMaps  []v4.ConfigMapRef
	secrets     []v4.SecretRef
	pullSecrets []v4.LocalObjectReference
}

// refsOf lists the tasks of pod with the configmaps and secrets they name.
func refsOf(pod *v4.PodSpec) []taskRefs {
	var out []taskRefs
	for i, c := range pod.Containers {
		out = append(out, taskRefs{fmt.Sprintf("spec.template.spec.containers[%d]", i), c.ConfigMaps, c.Secrets, c.ImagePullSecrets})
	}
	for i, p := range pod.Processes {
		out = append(out, taskRefs{fmt.Sprintf("spec.template.spec.processes[%d]", i), p.ConfigMaps, p.Secrets, nil})
	}
	return out
}

// checkReferences refuses a workload that names a configmap or a secret of its
// namespace, or a key of one, that is neither stored nor written in the same stream:
// 422 naming each path (docs/compat.md, "References"). BCS refused such a create;
// accepting it would fail every start of its instances.
func (s *Server) checkReferences(ctx context.Context, obj v4.Object, stream []v4.Document) error {
	pod := v4.PodSpecOf(obj)
	if pod == nil {
		return nil
	}
	ns := obj.GetMeta().Namespace
	keys := map[string]map[string]bool{} // "kind/name" -> its keys; nil: no such object
	keysOf := func(kind v4.Kind, name string) (map[string]bool, error) {
		k := string(kind) + "/" + name
		if have, ok := keys[k]; ok {
			return have, nil
		}
		o := streamObject(stream, kind, ns, name)
		if o == nil {
			got, err := s.store.Get(ctx, kind, ns, name)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return nil, fmt.Errorf("read %s %s/%s: %w", kind, ns, name, err)
			default:
				o = got
			}
		}
		keys[k] = dataKeys(o)
		return keys[k], nil
	}
	var problems v4.FieldErrors
	for _, t := range refsOf(pod) {
		for i, ref := range t.configMaps {
			have, err := keysOf(v4.KindConfigMap, ref.Name)
			if err != nil {
				return err
			}
			problems = append(problems, missing(fmt.Sprintf("%s.configmaps[%d]", t.path, i), "name", v4.KindConfigMap, ns, ref.Name, have,
				itemKeys(ref.Items, func(it v4.ConfigMapItem) string { return it.DataKey }))...)
		}
		for i, ref := range t.secrets {
			have, err := keysOf(v4.KindSecret, ref.SecretName)
			if err != nil {
				return err
			}
			problems = append(problems, missing(fmt.Sprintf("%s.secrets[%d]", t.path, i), "secretName", v4.KindSecret, ns, ref.SecretName, have,
				itemKeys(ref.Items, func(it v4.SecretItem) string { return it.DataKey }))...)
		}
		for i, ref := range t.pullSecrets {
			have, err := keysOf(v4.KindSecret, ref.Name)
			if err != nil {
				return err
			}
			problems = append(problems, missingPullSecret(fmt.Sprintf("%s.imagePullSecrets[%d].name", t.path, i), ns, ref.Name, have)...)
		}
	}
	return httpapi.InvalidObject(obj, problems)
}

// missing lists the problems of one reference at path: the object (nameField) that does
// not exist, or each item's dataKey it does not hold.
func missing(path, nameField string, kind v4.Kind, ns, name string, have map[string]bool, dataKeys []string) v4.FieldErrors {
	if have == nil {
		return v4.FieldErrors{{Field: path + "." + nameField, Message: fmt.Sprintf("%s %s/%s does not exist (create it first, or in the same apply)", kind, ns, name)}}
	}
	var out v4.FieldErrors
	for j, k := range dataKeys {
		if !have[k] {
			out = append(out, v4.FieldError{Field: fmt.Sprintf("%s.items[%d].dataKey", path, j), Message: fmt.Sprintf("%s %s/%s has no key %q", kind, ns, name, k)})
		}
	}
	return out
}

// missingPullSecret is the problem of an image pull secret at path: it does not exist,
// or it holds no docker config (the key its type requires at admission), so it has no
// credentials to give.
func missingPullSecret(path, ns, name string, have map[string]bool) v4.FieldErrors {
	switch {
	case have == nil:
		return missing(path[:len(path)-len(".name")], "name", v4.KindSecret, ns, name, nil, nil)
	case !have[v4.DockerConfigJSONKey]:
		return v4.FieldErrors{{Field: path, Message: fmt.Sprintf("secret %s/%s is not a docker config secret (type %s, key %q)",
			ns, name, v4.SecretTypeDockerConfigJSON, v4.DockerConfigJSONKey)}}
	}
	return nil
}

// itemKeys lists the dataKey of each item.
func itemKeys[T any](items []T, dataKey func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = dataKey(it)
	}
	return out
}

// dataKeys is the set of keys of a configmap or a secret; nil for no object.
func dataKeys(o v4.Object) map[string]bool {
	out := map[string]bool{}
	switch x := o.(type) {
	case *v4.ConfigMap:
		for k := range x.Datas {
			out[k] = true
		}
	case *v4.Secret:
		for k := range x.Datas {
			out[k] = true
		}
	default:
		return nil
	}
	return out
}

// streamObject is the object of kind ns/name written in the same stream, or nil.
func streamObject(stream []v4.Document, kind v4.Kind, ns, name string) v4.Object {
	for _, d := range stream {
		m := d.Object.GetMeta()
		if d.Object.GetKind() == kind && m.Namespace == ns && m.Name == name {
			return d.Object
		}
	}
	return nil
}

// configUserKinds are the kinds whose pods may name configmaps and secrets: the
// workloads, dependencies and jobs.
var configUserKinds = append(slices.Clone(workloadKinds), v4.KindDependency, v4.KindJob)

// checkConfigDelete refuses to delete a configmap or a secret that a workload of its
// namespace names, listing them (409), unless ?force=true: their instances would fail
// at their next start.
func (s *Server) checkConfigDelete(ctx context.Context, r *http.Request, kind v4.Kind) error {
	force, err := httpapi.BoolParam(r.URL.Query().Get("force"), "force")
	if err != nil || force {
		return err
	}
	ns, name := r.PathValue("ns"), r.PathValue("name")
	var users []string
	var refs []v4.ObjectRef
	for _, k := range configUserKinds {
		objs, _, err := s.store.List(ctx, k, ns)
		if err != nil {
			return fmt.Errorf("list the %s that may use %s %s/%s: %w", k.Plural(), kind, ns, name, err)
		}
		for _, o := range objs {
			if pod := v4.PodSpecOf(o); pod != nil && pod.Names(kind, name) {
				users = append(users, fmt.Sprintf("%s %s/%s", k, ns, o.GetMeta().Name))
				if len(refs) < v4.MaxUsedBy {
					refs = append(refs, v4.ObjectRef{Kind: k, Namespace: ns, Name: o.GetMeta().Name})
				}
			}
		}
	}
	if len(users) == 0 {
		return nil
	}
	e := httpapi.Errorf(http.StatusConflict, "%s %s/%s is used by %s: change them first, or delete with ?force=true (berth delete --force)",
		kind, ns, name, strings.Join(users, ", "))
	e.UsedBy = refs
	return e
}
