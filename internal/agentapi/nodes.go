package agentapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// agentWriteAttempts bounds the read-modify-write loops of agent writes (registration,
// heartbeat, status) that lose a race with another writer.
const agentWriteAttempts = 5

// handleAgentRegister creates the agent's node, or updates what the agent owns while
// keeping what operators set. Which labels and attributes the agent gave last time is
// read from the node's definition (the stored registration body), so an operator's own
// labels survive and a label the agent stopped sending goes away.
func (a *API) handleAgentRegister(w http.ResponseWriter, r *http.Request) error {
	n, body, err := a.bodies.ReadNode(w, r, "the node")
	if err != nil {
		return err
	}
	if node := httpapi.NodeOf(r); n.Metadata.Name != node {
		return httpapi.Errorf(http.StatusForbidden, "metadata.name: this agent's certificate is for node %s; it cannot register node %q (a node's name is fixed when its agent joins)", node, n.Metadata.Name)
	}
	// The agent is alive right now: registering counts as a heartbeat (server clock).
	n.Status.Phase = v4.NodeReady
	n.Status.LastHeartbeat = time.Now().UTC()
	raw := store.Raw{ContentType: store.ContentTypeJSON, Data: body}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	a.beats.forget(n.Metadata.Name) // the next beat compares with what this writes
	// The lease the agent's heartbeat stream will want (pace.go), so that its first beat
	// need not move it; until that stream tells it otherwise, the agent beats at its own
	// interval, which any of these TTLs covers.
	_, ttl := a.pace.TTLs(a.pace.Interval(a.nodeCache.Len()))
	if _, err := a.store.Beat(ctx, n.Metadata.Name, ttl); err != nil {
		return err
	}
	for range agentWriteAttempts {
		cur, err := a.nodes().Get(ctx, "", n.Metadata.Name)
		if errors.Is(err, store.ErrNotFound) {
			err = a.nodes().Create(ctx, n, raw)
			if errors.Is(err, store.ErrAlreadyExists) {
				continue // another registration won: merge with it
			}
			if err != nil {
				return httpapi.NodeError(n.Metadata.Name, err)
			}
			httpapi.Record(a.store, n, "Registered", "registered by its agent")
			httpapi.WriteJSON(w, http.StatusCreated, n)
			return nil
		}
		if err != nil {
			return httpapi.NodeError(n.Metadata.Name, err)
		}
		merged := mergeRegistration(cur, n, a.previousRegistration(ctx, n.Metadata.Name))
		if err := httpapi.Validate(merged); err != nil {
			return err
		}
		err = a.nodes().Update(ctx, merged, raw)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return httpapi.NodeError(n.Metadata.Name, err)
		}
		httpapi.Record(a.store, merged, "Registered", "re-registered by its agent")
		httpapi.WriteJSON(w, http.StatusOK, merged)
		return nil
	}
	return httpapi.Errorf(http.StatusConflict, "node %s changed %d times during registration; try again", n.Metadata.Name, agentWriteAttempts)
}

// previousRegistration decodes the node's stored definition loosely: it only tells which
// labels and attributes were the agent's, so anything unreadable counts as none.
func (a *API) previousRegistration(ctx context.Context, name string) *v4.Node {
	prev := &v4.Node{}
	raw, err := a.store.GetRaw(ctx, v4.KindNode, "", name)
	if err == nil {
		if json.Unmarshal(raw.Data, prev) != nil {
			prev = &v4.Node{}
		}
	}
	return prev
}

// mergeRegistration returns the stored node cur updated with the agent's registration
// reg: the agent owns hostname, ip, resources, port ranges, status and its own labels
// and attributes; taints, disabled, annotations and the labels and attributes operators
// added are kept. prev is the agent's previous registration.
func mergeRegistration(cur, reg, prev *v4.Node) *v4.Node {
	out := *reg
	out.Metadata = cur.Metadata
	out.Metadata.Labels = mergeOwned(cur.Metadata.Labels, prev.Metadata.Labels, reg.Metadata.Labels)
	a, cura, preva := &out.Spec.Attributes, &cur.Spec.Attributes, &prev.Spec.Attributes
	a.Text = mergeOwned(cura.Text, preva.Text, reg.Spec.Attributes.Text)
	a.Scalar = mergeOwned(cura.Scalar, preva.Scalar, reg.Spec.Attributes.Scalar)
	a.Set = mergeOwned(cura.Set, preva.Set, reg.Spec.Attributes.Set)
	out.Spec.Taints = cur.Spec.Taints
	out.Spec.Disabled = cur.Spec.Disabled
	return &out
}

// mergeOwned merges the agent's keys (reg) into the stored ones (cur). A key is the
// agent's when it gave it last time (prev) with the value still stored; every other key
// of cur is an operator's and is kept as it is, whatever the agent now says: a node's
// agent cannot relabel its node (trust=quarantine stays). The agent's keys take its new
// values, and one it dropped is removed.
func mergeOwned[V any](cur, prev, reg map[string]V) map[string]V {
	agents := func(k string) bool {
		p, gave := prev[k]
		c, stored := cur[k]
		return gave && (!stored || reflect.DeepEqual(p, c))
	}
	out := make(map[string]V, len(cur)+len(reg))
	for k, v := range cur {
		if !agents(k) {
			out[k] = v
		}
	}
	for k, v := range reg {
		if _, operators := out[k]; !operators {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// handleAgentHeartbeat takes one beat (PUT /v1/agent/nodes/{name}/heartbeat). Agents
// send their beats on a stream (beatstream.go); this route stays for other clients.
func (a *API) handleAgentHeartbeat(w http.ResponseWriter, r *http.Request) error {
	body, err := a.bodies.Read(w, r)
	if err != nil {
		return err
	}
	var hb v4.AgentHeartbeat
	if len(body) > 0 {
		if err := httpapi.DecodeStrict(body, &hb); err != nil {
			return httpapi.Errorf(http.StatusBadRequest, "the body is not a heartbeat: %v", err)
		}
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	if err := a.beat(ctx, r.PathValue("name"), hb, a.nodeTTL); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// beat keeps the node alive (its etcd lease, the store's liveness.go: no write) and
// writes the node only when it changes: it becomes Ready again (its lease had expired,
// or it was Lost), or its agent's version or address changed. Most beats change nothing
// and return as soon as the store queued the lease's renewal. A node deleted by an
// operator is a 404: the agent registers again. ttl is the node's TTL, should its lease
// be granted anew.
func (a *API) beat(ctx context.Context, name string, hb v4.AgentHeartbeat, ttl time.Duration) error {
	known, err := a.store.RenewKnown(name)
	if err != nil {
		return err
	}
	if known && a.beats.same(name, hb) {
		return nil // most beats: no context, no timer, no read
	}
	ctx, cancel := context.WithTimeout(ctx, httpapi.RequestTimeout)
	defer cancel()
	fresh := false
	if !known {
		if fresh, err = a.store.Beat(ctx, name, ttl); err != nil {
			return err
		}
	}
	if !fresh && a.beats.same(name, hb) {
		return nil
	}
	err = a.updateNode(ctx, name, "during the heartbeat", func(n *v4.Node) bool {
		if !heartbeatChanges(n, hb) {
			return false
		}
		n.Status.Phase = v4.NodeReady
		n.Status.LastHeartbeat = time.Now().UTC()
		if hb.AgentVersion != "" {
			n.Status.AgentVersion = hb.AgentVersion
		}
		if hb.AgentAddress != "" {
			n.Status.AgentAddress = hb.AgentAddress
		}
		return true
	})
	if err != nil {
		return err
	}
	a.beats.remember(name, hb)
	return nil
}

// heartbeatChanges reports whether a beat changes the stored node: it is not Ready, or
// the agent's version or address differ.
func heartbeatChanges(n *v4.Node, hb v4.AgentHeartbeat) bool {
	return n.Status.Phase != v4.NodeReady ||
		hb.AgentVersion != "" && hb.AgentVersion != n.Status.AgentVersion ||
		hb.AgentAddress != "" && hb.AgentAddress != n.Status.AgentAddress
}
