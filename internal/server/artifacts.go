package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/artifacts"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// The artifact routes (docs/api.md, "Artifacts"): agents store a step's outputs and read
// its inputs at the key and repository its task group's spec.step names, never one they
// choose; users download a workflow's stored artifacts. internal/artifacts keeps them.

// mainLogs is the artifact name of a step's main task log (StepIO.LogsKey).
const mainLogs = "main-logs"

func (s *Server) artifactRoutes(mux *httpapi.Mux) {
	mux.Handle("PUT /v1/agent/artifacts", httpapi.NodeCert, s.handleAgentArtifactPut)
	mux.Handle("GET /v1/agent/artifacts", httpapi.NodeCert, s.handleAgentArtifactGet)
	mux.Handle("GET /v1/namespaces/{ns}/workflows/{name}/artifacts/{nodeID}/{artifact}",
		on(acl.VerbRead, string(v4.KindWorkflow)), s.handleWorkflowArtifact)
	mux.Handle("GET /v1/artifacts/blobs/{digest}", httpapi.ServerCert, s.handleArtifactBlob) // artifacts_peer.go
}

// openArtifacts opens the embedded store under cfg.ArtifactDir (none without one) and
// starts its collector, which Close stops.
func (s *Server) openArtifacts(cfg Config) error {
	var emb *artifacts.Embedded
	if cfg.ArtifactDir != "" {
		var err error
		if emb, err = artifacts.OpenEmbedded(cfg.ArtifactDir, s.store.Client(), cfg.Logger); err != nil {
			return err
		}
	}
	s.peerHTTP = newPeerHTTP(s.ca, s.identity)
	s.artifacts = artifacts.NewRouter(artifacts.RouterConfig{Store: s.store, Embedded: emb,
		AllowPrivateEndpoints: cfg.ArtifactAllowPrivateEndpoints, Logger: cfg.Logger})
	interval := cfg.ArtifactGCInterval
	if interval <= 0 {
		interval = artifacts.DefaultGCInterval
	}
	gc := artifacts.NewGC(s.artifacts)
	s.following.Go(func() { gc.Run(s.streams, interval) })
	return nil
}

// artifactQuery reads namespace, taskgroup and the name parameter of an agent's call.
func artifactQuery(r *http.Request, nameParam string) (ns, tg, name string, err error) {
	q := r.URL.Query()
	ns, tg, name = q.Get("namespace"), q.Get("taskgroup"), q.Get(nameParam)
	for _, f := range []struct{ field, value string }{{"namespace", ns}, {"taskgroup", tg}, {nameParam, name}} {
		if f.value == "" {
			return "", "", "", httpapi.Errorf(http.StatusBadRequest, "%s: required", f.field).WithDetail(f.field, "required")
		}
	}
	return ns, tg, name, nil
}

// stepOf returns the spec.step of task group ns/name if it is bound to node.
func (s *Server) stepOf(ctx context.Context, ns, name, node string) (*v4.StepIO, error) {
	tg, err := store.Typed[*v4.TaskGroup](s.store, v4.KindTaskGroup).Get(ctx, ns, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, httpapi.Errorf(http.StatusNotFound, "task group %s/%s not found", ns, name)
	}
	if err != nil {
		return nil, err
	}
	if tg.Spec.Node != node {
		return nil, httpapi.Errorf(http.StatusForbidden, "task group %s/%s is not bound to node %s", ns, name, node)
	}
	if tg.Spec.Step == nil {
		return nil, httpapi.Errorf(http.StatusForbidden, "task group %s/%s is not a workflow step (no spec.step)", ns, name)
	}
	return tg.Spec.Step, nil
}

// handleAgentArtifactPut stores the body as output artifact NAME of a step (or its log,
// NAME main-logs) at the key its spec.step says, within v4.MaxStepArtifactBytes.
func (s *Server) handleAgentArtifactPut(w http.ResponseWriter, r *http.Request) error {
	ns, tg, name, err := artifactQuery(r, "artifact")
	if err != nil {
		return err
	}
	step, err := s.stepOf(r.Context(), ns, tg, httpapi.NodeOf(r))
	if err != nil {
		return err
	}
	repo, key := "", ""
	for _, a := range step.Artifacts {
		if a.Name == name {
			repo, key = a.Repository, a.Key
		}
	}
	if name == mainLogs && step.LogsKey != "" {
		repo, key = "", step.LogsKey
	}
	if key == "" {
		return httpapi.Errorf(http.StatusForbidden, "task group %s/%s: spec.step has no output artifact %q", ns, tg, name)
	}
	stored, err := s.artifacts.Put(r.Context(), ns, repo, key, r.Body, v4.MaxStepArtifactBytes)
	if err != nil {
		return artifactError(fmt.Sprintf("output artifact %s of task group %s/%s", name, ns, tg), err)
	}
	stored.Name = name
	httpapi.WriteJSON(w, http.StatusOK, stored)
	return nil
}

// handleAgentArtifactGet streams input NAME of a step from the repository and key its
// spec.step says.
func (s *Server) handleAgentArtifactGet(w http.ResponseWriter, r *http.Request) error {
	ns, tg, name, err := artifactQuery(r, "input")
	if err != nil {
		return err
	}
	step, err := s.stepOf(r.Context(), ns, tg, httpapi.NodeOf(r))
	if err != nil {
		return err
	}
	for _, in := range step.Inputs {
		if in.Name == name && in.Key != "" {
			rc, info, err := s.openArtifact(r.Context(), ns, in.Repository, in.Key)
			if err != nil {
				return artifactError(fmt.Sprintf("input artifact %s of task group %s/%s", name, ns, tg), err)
			}
			return s.streamArtifact(w, rc, info, name)
		}
	}
	return httpapi.Errorf(http.StatusForbidden, "task group %s/%s: spec.step has no repository input %q", ns, tg, name)
}

// handleWorkflowArtifact streams artifact ARTIFACT of node NODEID of a workflow (its
// step's log for main-logs), at the key the workflow controller gives it: of the stored
// workflow, or of an archived one (artifactsUID).
func (s *Server) handleWorkflowArtifact(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	nodeID, art := r.PathValue("nodeID"), r.PathValue("artifact")
	uid, err := s.artifactsUID(r.Context(), r)
	if err != nil {
		return err
	}
	key := ns + "/" + name + "/" + uid + "/" + nodeID + "/" + art
	if err := v4.CheckArtifactKey(key); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "node %q, artifact %q: %v", nodeID, art, err)
	}
	rec, err := s.artifacts.Lookup(r.Context(), key)
	if err != nil {
		return err
	}
	if rec == nil {
		return httpapi.Errorf(http.StatusNotFound, "workflow %s/%s has no stored artifact %q of node %q", ns, name, art, nodeID)
	}
	rc, info, err := s.openArtifact(r.Context(), ns, rec.Repository, key)
	if err != nil {
		return artifactError(fmt.Sprintf("artifact %s of node %s of workflow %s/%s", art, nodeID, ns, name), err)
	}
	return s.streamArtifact(w, rc, info, art)
}

// streamArtifact copies rc to w (and closes it); a failure after the first byte can
// only be logged, the status having gone.
func (s *Server) streamArtifact(w http.ResponseWriter, rc io.ReadCloser, info artifacts.Info, name string) error {
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
	if info.Size >= 0 {
		h.Set("Content-Length", strconv.FormatInt(info.Size, 10))
	}
	if info.Digest != "" {
		h.Set("X-Berth-Digest", info.Digest)
	}
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rc); err != nil {
		s.log.Warn("artifact download ended early", "artifact", name, "err", err)
	}
	return nil
}

// artifactError answers a failed store or read of what.
func artifactError(what string, err error) error {
	var elsewhere *artifacts.ElsewhereError
	switch {
	case errors.Is(err, artifacts.ErrInvalidKey):
		return httpapi.Errorf(http.StatusForbidden, "%s: %v", what, err)
	case errors.Is(err, artifacts.ErrTooLarge):
		return httpapi.Errorf(http.StatusRequestEntityTooLarge, "%s: %v", what, err)
	case errors.Is(err, artifacts.ErrNotFound):
		return httpapi.Errorf(http.StatusNotFound, "%s: %v", what, err)
	case errors.As(err, &elsewhere), errors.Is(err, artifacts.ErrNoEmbedded):
		return httpapi.Errorf(http.StatusServiceUnavailable, "%s: %v", what, err)
	case errors.Is(err, artifacts.ErrStore):
		return httpapi.Errorf(http.StatusBadGateway, "%s: %v", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
