package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/berthhq/berth/internal/artifacts"
	"github.com/berthhq/berth/internal/httpapi"
	"github.com/berthhq/berth/internal/pki"
)

// An embedded artifact is kept by the server that received it (docs/workflows.md,
// "Artifact repositories"). Another server asked for it fetches the blob from that one,
// whose URL its store advertised in etcd, with the servers' client certificate, and
// streams it on: in a cluster of several servers a step reads what a step on a node of
// another server stored, as long as the server holding it runs.

// peerTimeout bounds the wait for another server's answer (not the transfer).
const peerTimeout = 30 * time.Second

// newPeerHTTP is the client of the calls to the other servers: it trusts the cluster
// CA, presents the server's identity and uses no proxy.
func newPeerHTTP(ca *pki.CA, id *pki.Rotating) *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 nil,
		TLSClientConfig:       pki.Hardened(&tls.Config{RootCAs: ca.Pool(), GetClientCertificate: id.GetClientCertificate}),
		ForceAttemptHTTP2:     true,
		ResponseHeaderTimeout: peerTimeout,
		IdleConnTimeout:       90 * time.Second,
	}}
}

// AdvertiseArtifacts records https://hostport as where the other servers fetch this
// server's embedded blobs (nothing without an embedded store).
func (s *Server) AdvertiseArtifacts(ctx context.Context, hostport string) error {
	emb := s.artifacts.Embedded()
	if emb == nil {
		return nil
	}
	return emb.Advertise(ctx, "https://"+hostport)
}

// openArtifact opens key of ns in repository repo, from the server holding it when that
// is another one.
func (s *Server) openArtifact(ctx context.Context, ns, repo, key string) (io.ReadCloser, artifacts.Info, error) {
	rc, info, err := s.artifacts.Get(ctx, ns, repo, key)
	var elsewhere *artifacts.ElsewhereError
	if !errors.As(err, &elsewhere) {
		return rc, info, err
	}
	base, uerr := s.artifacts.HolderURL(ctx, elsewhere.Holder)
	if uerr != nil || base == "" {
		return nil, artifacts.Info{}, err
	}
	req, rerr := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/artifacts/blobs/"+url.PathEscape(elsewhere.Info.Digest), nil)
	if rerr != nil {
		return nil, artifacts.Info{}, fmt.Errorf("%w (at %s: %v)", err, base, rerr)
	}
	resp, rerr := s.peerHTTP.Do(req)
	if rerr != nil {
		return nil, artifacts.Info{}, fmt.Errorf("%w (at %s: %v)", err, base, rerr)
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		return nil, artifacts.Info{}, fmt.Errorf("%w (at %s: %s: %s)", err, base, resp.Status, msg)
	}
	return resp.Body, elsewhere.Info, nil
}

// handleArtifactBlob streams a blob of this server's embedded store to another server.
func (s *Server) handleArtifactBlob(w http.ResponseWriter, r *http.Request) error {
	digest := r.PathValue("digest")
	emb := s.artifacts.Embedded()
	if emb == nil {
		return httpapi.Errorf(http.StatusNotFound, "this server has no embedded artifact repository")
	}
	f, err := emb.OpenBlob(digest)
	if errors.Is(err, artifacts.ErrNotFound) {
		return httpapi.Errorf(http.StatusNotFound, "%v", err)
	}
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	return s.streamArtifact(w, f, artifacts.Info{Size: st.Size(), Digest: digest}, digest)
}
