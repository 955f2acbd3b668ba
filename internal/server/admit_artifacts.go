package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// admitArtifactRepos checks what api/v4 cannot about artifact repositories
// (docs/workflows.md, "Artifact repositories"): an artifactrepository's secrets exist
// and at most one repository of a namespace is its default; a workflow's (or a
// workflowtemplate's) artifacts name repositories that exist. Each is looked for in the
// same stream first, then in the store.
func admitArtifactRepos(ctx context.Context, a *admission, t target) error {
	switch o := t.obj.(type) {
	case *v4.ArtifactRepository:
		return a.s.checkArtifactRepository(ctx, o, a.docs)
	case *v4.Workflow:
		return a.s.checkArtifactRepoRefs(ctx, o, &o.Spec, a.docs)
	case *v4.WorkflowTemplate:
		return a.s.checkArtifactRepoRefs(ctx, o, &o.Spec, a.docs)
	}
	return nil
}

// exists reports whether kind ns/name is in the stream or stored.
func (s *Server) exists(ctx context.Context, stream []v4.Document, kind v4.Kind, ns, name string) (bool, error) {
	if streamObject(stream, kind, ns, name) != nil {
		return true, nil
	}
	_, err := s.store.Get(ctx, kind, ns, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s %s/%s: %w", kind, ns, name, err)
	}
	return true, nil
}

func (s *Server) checkArtifactRepository(ctx context.Context, o *v4.ArtifactRepository, stream []v4.Document) error {
	ns := o.Metadata.Namespace
	var problems v4.FieldErrors
	if s3 := o.Spec.S3; s3 != nil {
		for _, ref := range []struct {
			field string
			name  string
		}{{"spec.s3.accessKeySecret.name", s3.AccessKeySecret.Name}, {"spec.s3.secretKeySecret.name", s3.SecretKeySecret.Name}} {
			ok, err := s.exists(ctx, stream, v4.KindSecret, ns, ref.name)
			if err != nil {
				return err
			}
			if !ok {
				problems = append(problems, v4.FieldError{Field: ref.field,
					Message: fmt.Sprintf("secret %s/%s does not exist (create it first, or in the same apply)", ns, ref.name)})
			}
		}
	}
	if err := httpapi.InvalidObject(o, problems); err != nil {
		return err
	}
	if !o.Spec.Default {
		return nil
	}
	other, err := s.otherDefaultRepo(ctx, o, stream)
	if err != nil || other == "" {
		return err
	}
	return httpapi.Errorf(http.StatusConflict, "artifactrepository %s/%s: spec.default: artifactrepository %s is already the namespace's default (at most one is)",
		ns, o.Metadata.Name, other).WithDetail("spec.default", "another repository is the default")
}

// otherDefaultRepo names another default artifactrepository of o's namespace, in the
// stream or stored ("" when none).
func (s *Server) otherDefaultRepo(ctx context.Context, o *v4.ArtifactRepository, stream []v4.Document) (string, error) {
	ns := o.Metadata.Namespace
	for _, d := range stream {
		if a, ok := d.Object.(*v4.ArtifactRepository); ok && a.Metadata.Namespace == ns && a.Metadata.Name != o.Metadata.Name && a.Spec.Default {
			return a.Metadata.Name, nil
		}
	}
	all, _, err := store.Typed[*v4.ArtifactRepository](s.store, v4.KindArtifactRepository).List(ctx, ns)
	if err != nil {
		return "", fmt.Errorf("list artifactrepositories of %s: %w", ns, err)
	}
	for _, a := range all {
		if a.Metadata.Name == o.Metadata.Name || !a.Spec.Default {
			continue
		}
		// One the same stream makes no longer the default does not count.
		if in, ok := streamObject(stream, v4.KindArtifactRepository, ns, a.Metadata.Name).(*v4.ArtifactRepository); ok && !in.Spec.Default {
			continue
		}
		return a.Metadata.Name, nil
	}
	return "", nil
}

// checkArtifactRepoRefs refuses a workflow whose artifacts name a repository that does
// not exist in its namespace: it would fail at its first step that stores or reads one.
func (s *Server) checkArtifactRepoRefs(ctx context.Context, obj v4.Object, spec *v4.WorkflowSpec, stream []v4.Document) error {
	ns := obj.GetMeta().Namespace
	known := map[string]bool{}
	var problems v4.FieldErrors
	for path, name := range artifactRepoRefs(spec) {
		ok, seen := known[name]
		if !seen {
			var err error
			if ok, err = s.exists(ctx, stream, v4.KindArtifactRepository, ns, name); err != nil {
				return err
			}
			known[name] = ok
		}
		if !ok {
			problems = append(problems, v4.FieldError{Field: path,
				Message: fmt.Sprintf("artifactrepository %s/%s does not exist (create it first, or in the same apply)", ns, name)})
		}
	}
	return httpapi.InvalidObject(obj, problems)
}

// artifactRepoRefs yields the field path and name of every repository a workflow spec's
// artifacts name: the workflow's arguments, each template's inputs and outputs, and the
// arguments of each step and dag task.
func artifactRepoRefs(spec *v4.WorkflowSpec) func(yield func(string, string) bool) {
	return func(yield func(string, string) bool) {
		each := func(path string, arts []v4.WfArtifact) bool {
			for i, a := range arts {
				if a.Repository != nil && a.Repository.Name != "" &&
					!yield(fmt.Sprintf("%s[%d].repository.name", path, i), a.Repository.Name) {
					return false
				}
			}
			return true
		}
		if spec.Arguments != nil && !each("spec.arguments.artifacts", spec.Arguments.Artifacts) {
			return
		}
		for ti := range spec.Templates {
			t := &spec.Templates[ti]
			p := fmt.Sprintf("spec.templates[%d]", ti)
			if t.Inputs != nil && !each(p+".inputs.artifacts", t.Inputs.Artifacts) {
				return
			}
			if t.Outputs != nil && !each(p+".outputs.artifacts", t.Outputs.Artifacts) {
				return
			}
		}
		for path, step := range workflowCalls(spec) {
			if step.Arguments != nil && !each(path+".arguments.artifacts", step.Arguments.Artifacts) {
				return
			}
		}
	}
}

// admitArtifactRepoSecrets refuses, with a 403 naming the field, an artifactrepository
// whose writer may not read the namespace's secrets: naming a secret is reading it (the
// server sends the access key in the clear to the endpoint the writer chose, and either
// reference may name any item of any secret of the namespace).
func admitArtifactRepoSecrets(r *http.Request, obj v4.Object) error {
	a, ok := obj.(*v4.ArtifactRepository)
	if !ok || a.Spec.S3 == nil {
		return nil
	}
	id := identityOf(r)
	req := acl.Request{Verb: acl.VerbRead, Kind: string(v4.KindSecret), Namespace: a.Metadata.Namespace}
	if id.Allowed(req) {
		return nil
	}
	const field = "spec.s3.accessKeySecret.name"
	return httpapi.Errorf(http.StatusForbidden, "%s: %s may not hand the artifact store a secret it may not read: it may not %s", field, id, req).
		WithDetail(field, "needs "+req.String())
}
