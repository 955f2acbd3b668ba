package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/berthhq/berth/api/cluster"
	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/acl"
	"github.com/berthhq/berth/internal/controller"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/store"
)

// Cluster routes (docs/ha.md): GET /v1/cluster shows the etcd members, their health and
// space, and which server leads the controllers; POST /v1/cluster/members is how a new
// server with --join gets its etcd member added (joining takes the join token, like an
// agent, but a server token); POST /v1/cluster/recover frees etcd's space (docs/operations.md).
func (s *Server) clusterRoutes(mux *httpapi.Mux) {
	mux.Handle("GET /v1/cluster", on(acl.VerbRead, acl.KindCluster), s.handleCluster)
	mux.Handle("POST /v1/cluster/members", httpapi.ServerJoin, s.handleMemberAdd)
	mux.Handle("POST /v1/cluster/recover", adminCluster, s.handleRecover)
}

// handleCluster answers even without etcd quorum (with what this server can see and the
// errors), since that is when an operator needs it most.
func (s *Server) handleCluster(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	var v cluster.Info
	v.Self.ID, v.Self.Member = s.id, s.store.MemberName()
	v.Etcd = "external"
	if s.store.Embedded() {
		v.Etcd = "embedded"
	}
	members, err := s.store.Members(ctx)
	if err != nil {
		v.MembersError = err.Error()
	}
	v.Members = members
	if v.Members == nil {
		v.Members = []cluster.Member{}
	}
	lctx, lcancel := context.WithTimeout(ctx, readyTimeout)
	defer lcancel()
	if v.Leader, err = controller.LeaderID(lctx, s.store); err != nil {
		v.LeaderError = err.Error()
	}
	sctx, scancel := context.WithTimeout(ctx, readyTimeout)
	defer scancel()
	v.Space = s.store.Space(sctx)
	httpapi.WriteJSON(w, http.StatusOK, v)
	return nil
}

// recoverTimeout bounds POST /v1/cluster/recover: one defragmentation per member may
// take a while on a large database, longer than httpapi.RequestTimeout.
const recoverTimeout = 10 * time.Minute

// handleRecover compacts etcd's history, defragments every member this server reaches
// and disarms the NOSPACE alarm when they are back under their quota; it answers what
// it did, sizes before and after.
func (s *Server) handleRecover(w http.ResponseWriter, r *http.Request) error {
	if err := refuseBody(w, r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), recoverTimeout)
	defer cancel()
	s.log.Info("etcd space recovery requested", "remote", r.RemoteAddr)
	rec, err := s.store.Recover(ctx)
	if err != nil {
		return fmt.Errorf("recover etcd space: %w", err)
	}
	httpapi.WriteJSON(w, http.StatusOK, rec)
	return nil
}

func (s *Server) handleMemberAdd(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	var req cluster.MemberAdd
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		return httpapi.Errorf(http.StatusBadRequest, "decode the member: %v", err)
	}
	bad := httpapi.Errorf(http.StatusUnprocessableEntity, "the member is invalid")
	if err := store.ValidMemberName(req.Name); err != nil {
		bad.WithDetail("name", err.Error())
	}
	peer, err := store.ParsePeerURL(req.PeerURL)
	if err != nil {
		bad.WithDetail("peerURL", err.Error())
	}
	if len(bad.Details) > 0 {
		return bad
	}
	ctx, cancel := httpapi.RequestContext(r)
	defer cancel()
	ic, err := s.store.AddMember(ctx, req.Name, peer)
	switch {
	case errors.Is(err, store.ErrNotJoinable), errors.Is(err, store.ErrAlreadyExists):
		return httpapi.Errorf(http.StatusConflict, "%v", err)
	case errors.Is(err, store.ErrUnavailable):
		// The joining server retries: the usual course of a join, not a server error.
		s.log.Info("join deferred", "member", req.Name, "reason", err)
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, struct {
			Error *httpapi.Error `json:"error"`
		}{httpapi.Errorf(http.StatusServiceUnavailable, "%v", err)})
		return nil
	case err != nil:
		return err
	}
	added := cluster.Joined{Name: req.Name, PeerURL: peer, InitialCluster: ic, CACert: string(s.ca.CertPEM)}
	key, err := s.ca.KeyPEM()
	if err != nil {
		return err
	}
	added.CAKey = string(key)
	if r := s.store.Keyring(); r != nil {
		added.EncryptionKeys = string(r.Format())
	}
	httpapi.WriteJSON(w, http.StatusCreated, added)
	return nil
}

// joinAuth lets a join through only with a server join token: a joining server receives
// the cluster's encryption keys and, as an etcd member, its CA.
func (s *Server) joinAuth(next httpapi.HandlerFunc) httpapi.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := httpapi.RequestContext(r)
		defer cancel()
		if _, err := httpapi.JoinTokenOf(ctx, s.store, r, v4.JoinRoleServer); err != nil {
			if ae, ok := errors.AsType[*httpapi.Error](err); ok && ae.Code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="berth-join"`)
			}
			return err
		}
		return next(w, r)
	}
}
