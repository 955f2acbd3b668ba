package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// Nodes are cluster-scoped: they live at /v1/nodes, outside the namespaced routes. Agents
// register and replace them; operators change labels, attributes, taints and disabled
// with PATCH (docs/api.md, Nodes).

// patchAttempts bounds how often a PATCH re-reads the node after losing a race.
const patchAttempts = 5

func nodeSubject(name string) string { return "node " + name }

func (s *Server) nodes() store.TypedStore[*v4.Node] {
	return store.Typed[*v4.Node](s.store, v4.KindNode)
}

func (s *Server) handleNodeList(w http.ResponseWriter, r *http.Request) error {
	watch, err := httpapi.BoolParam(r.URL.Query().Get("watch"), "watch")
	if err != nil {
		return err
	}
	if watch {
		return s.watchObjects(w, r, v4.KindNode, "")
	}
	if paged(r) {
		return s.listPage(w, r, v4.KindNode, "")
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	objs, rev, err := s.store.List(ctx, v4.KindNode, "")
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, httpapi.ListBody{Kind: "List", ResourceVersion: strconv.FormatInt(rev, 10), Items: objs})
	return nil
}

func (s *Server) handleNodeGet(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	n, err := s.nodes().Get(ctx, "", r.PathValue("name"))
	if err != nil {
		return httpapi.NodeError(r.PathValue("name"), err)
	}
	// Beats renew the node's lease without writing the node: its last one is read from
	// the lease (lists show the time stored when the node last became Ready).
	if last, err := s.store.LastBeat(ctx, n.Metadata.Name); err == nil && last.After(n.Status.LastHeartbeat) {
		n.Status.LastHeartbeat = last
	}
	httpapi.WriteJSON(w, http.StatusOK, n)
	return nil
}

// handleNodeRegister creates a node (the agent's registration); 409 if it exists.
func (s *Server) handleNodeRegister(w http.ResponseWriter, r *http.Request) error {
	n, body, err := s.bodyReader.ReadNode(w, r, "the node")
	if err != nil {
		return err
	}
	if err := agentAddressUnchanged(n, ""); err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := s.nodes().Create(ctx, n, store.Raw{ContentType: store.ContentTypeJSON, Data: body}); err != nil {
		return httpapi.NodeError(n.Metadata.Name, err)
	}
	s.record(n, "Registered", "registered")
	httpapi.WriteJSON(w, http.StatusCreated, n)
	return nil
}

// handleNodeReplace replaces a node; a resourceVersion in the body is a precondition.
func (s *Server) handleNodeReplace(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	n, body, err := s.bodyReader.ReadNode(w, r, nodeSubject(name))
	if err != nil {
		return err
	}
	if n.Metadata.Name != name {
		return httpapi.Errorf(http.StatusBadRequest, "the node is named %q, the path %q", n.Metadata.Name, name).
			WithDetail("metadata.name", "must be "+name)
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	cur, err := s.nodes().Get(ctx, "", name)
	if err != nil {
		return httpapi.NodeError(name, err)
	}
	if n.Status.AgentAddress == "" { // a replacement that leaves it out keeps the agent's
		n.Status.AgentAddress = cur.Status.AgentAddress
	}
	if err := agentAddressUnchanged(n, cur.Status.AgentAddress); err != nil {
		return err
	}
	if err := s.nodes().Update(ctx, n, store.Raw{ContentType: store.ContentTypeJSON, Data: body}); err != nil {
		return httpapi.NodeError(name, err)
	}
	s.record(n, "Updated", "updated")
	httpapi.WriteJSON(w, http.StatusOK, n)
	return nil
}

// handleNodePatch applies a JSON merge patch (RFC 7386) to the stored node, then defaults,
// validates and writes the result with the read resourceVersion as precondition. Losing
// a race with another writer re-reads and re-applies the patch, unless the patch carries
// its own metadata.resourceVersion: then the caller asked for that exact version and
// gets 409.
func (s *Server) handleNodePatch(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var patch map[string]any
	if err := json.Unmarshal(body, &patch); err != nil || patch == nil {
		return httpapi.Errorf(http.StatusBadRequest, "the body must be a JSON merge patch object (RFC 7386)")
	}
	// json.Unmarshal keeps the last of two equal keys; a patch must say one thing
	// (docs/api.md).
	if err := v4.CheckDuplicateKeys(body); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "the merge patch is not valid: %v", err)
	}
	pinned := patchResourceVersion(patch) != ""
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	for range patchAttempts {
		n, err := s.patchNode(ctx, name, patch)
		if err != nil {
			return err
		}
		err = s.update(ctx, n)
		if errors.Is(err, store.ErrConflict) && !pinned {
			continue
		}
		if err != nil {
			return httpapi.NodeError(name, err)
		}
		s.record(n, "Patched", "patched")
		httpapi.WriteJSON(w, http.StatusOK, n)
		return nil
	}
	return httpapi.Errorf(http.StatusConflict, "node %s changed %d times while being patched; try again", name, patchAttempts)
}

// patchNode reads the node and returns it with the patch applied, checked, and its
// resourceVersion set to the one read (or the patch's own).
func (s *Server) patchNode(ctx context.Context, name string, patch map[string]any) (*v4.Node, error) {
	cur, err := s.nodes().Get(ctx, "", name)
	if err != nil {
		return nil, httpapi.NodeError(name, err)
	}
	curJSON, err := json.Marshal(cur)
	if err != nil {
		return nil, fmt.Errorf("encode node %s: %w", name, err)
	}
	var doc any
	if err := json.Unmarshal(curJSON, &doc); err != nil {
		return nil, fmt.Errorf("decode node %s: %w", name, err)
	}
	merged, err := json.Marshal(mergePatch(doc, patch))
	if err != nil {
		return nil, fmt.Errorf("encode patched node %s: %w", name, err)
	}
	n, err := httpapi.DecodeNode(merged, nodeSubject(name))
	if err != nil {
		return nil, err
	}
	if n.Metadata.Name != name {
		return nil, httpapi.Errorf(http.StatusBadRequest, "a patch cannot rename node %s", name).
			WithDetail("metadata.name", "cannot be changed")
	}
	if err := agentAddressUnchanged(n, cur.Status.AgentAddress); err != nil {
		return nil, err
	}
	return n, nil
}

// agentAddressUnchanged refuses a user's write that sets status.agentAddress: only the
// node's own agent, authenticated by its certificate, says where it serves (the server
// sends users' logs and exec sessions there).
func agentAddressUnchanged(n *v4.Node, cur string) error {
	if n.Status.AgentAddress == cur {
		return nil
	}
	return httpapi.Errorf(http.StatusForbidden, "status.agentAddress of node %s is set by the node's agent only", n.Metadata.Name).
		WithDetail("status.agentAddress", "cannot be changed through the API")
}

// patchResourceVersion returns metadata.resourceVersion of a patch, or "".
func patchResourceVersion(patch map[string]any) string {
	meta, _ := patch["metadata"].(map[string]any)
	rv, _ := meta["resourceVersion"].(string)
	return rv
}

func (s *Server) handleNodeDelete(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	rv, err := deleteVersion(r)
	if err != nil {
		return err
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	n, err := s.nodes().Delete(ctx, "", name, rv)
	if err != nil {
		return httpapi.NodeError(name, err)
	}
	s.agents.ForgetNode(name)
	if err := s.store.ForgetNode(ctx, name); err != nil {
		s.log.Warn("the deleted node's lease stays until it expires", "node", name, "err", err)
	}
	// The name is free for a new join (docs/security.md, Node identity).
	if err := s.store.ForgetNodeKey(ctx, name); err != nil {
		s.log.Warn("the deleted node's name stays held by its key", "node", name, "err", err)
	}
	s.record(n, "Deleted", "deleted")
	httpapi.WriteJSON(w, http.StatusOK, n)
	return nil
}
