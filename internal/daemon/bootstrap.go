package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/audit"
	"github.com/berthhq/berth/internal/jointoken"
	"github.com/berthhq/berth/internal/pki"
	"github.com/berthhq/berth/internal/store"
)

// A server's first start (docs/security.md, Bootstrap): the cluster CA is created in etcd
// by the first server and read by every later one; the data dir gets the CA certificate
// (ca.crt, for local clients) and a join token (join-token, 0600) that carries the CA's
// hash, which is all an agent needs to join.

// Files a server keeps in its data dir.
const (
	CAFile        = "ca.crt"
	JoinTokenFile = "join-token"
	// AdminTokenFile holds the management token made at the cluster's first start (0600),
	// as k3s keeps its admin kubeconfig: whoever is root on the server owns the cluster.
	AdminTokenFile = "admin-token"
)

// ensureCA reads the cluster's CA, creating it on the cluster's first start: the
// embedded member's own (which its etcd already uses), else a new one.
func ensureCA(ctx context.Context, st *store.Store, log *slog.Logger) (*pki.CA, error) {
	local := st.LocalCA()
	ca, created, err := st.EnsureCA(ctx, func() (*pki.CA, error) {
		if local != nil {
			return local, nil
		}
		return pki.NewCA("berth cluster CA", time.Now())
	})
	if err != nil {
		return nil, err
	}
	if local != nil && local.Hash() != ca.Hash() {
		return nil, fmt.Errorf("the cluster's CA (%s) is not the one of this member's data dir (%s)", ca.Hash(), local.Hash())
	}
	if created && local == nil {
		log.Info("cluster CA created", "caHash", ca.Hash())
	}
	return ca, nil
}

// bootstrapFiles makes sure the cluster knows cfg.JoinToken and writes the data dir's CA
// certificate and join token file.
func bootstrapFiles(ctx context.Context, st *store.Store, cfg ServerConfig) error {
	var given *jointoken.Token
	path := filepath.Join(cfg.DataDir, JoinTokenFile)
	if cfg.JoinToken != "" {
		tok, err := jointoken.Parse(cfg.JoinToken)
		if err != nil {
			return fmt.Errorf("--join-token: %w", err)
		}
		if tok.CAHash != "" && tok.CAHash != cfg.API.CA.Hash() {
			return fmt.Errorf("--join-token carries CA hash %s, but this cluster's CA is %s", tok.CAHash, cfg.API.CA.Hash())
		}
		// Only a server's first start teaches the cluster its token: a restart with the
		// same flag must not bring back a token revoked since.
		if _, err := os.Stat(path); cfg.DataDir == "" || err != nil {
			if err := ensureJoinToken(ctx, st, tok); err != nil {
				return err
			}
		}
		given = &tok
	}
	if err := bootstrapACL(ctx, st, cfg); err != nil {
		return err
	}
	if cfg.DataDir == "" {
		return nil
	}
	if err := atomicfile.Write(filepath.Join(cfg.DataDir, CAFile), cfg.API.CA.CertPEM, 0o644); err != nil {
		return fmt.Errorf("write the CA certificate: %w", err)
	}
	if given == nil {
		if _, err := os.Stat(path); err == nil {
			return nil // made on an earlier start
		}
		tok, err := jointoken.New()
		if err != nil {
			return err
		}
		if err := st.CreateJoinToken(ctx, &store.JoinToken{ID: tok.ID, SecretHash: tok.SecretHash(), Role: v4.JoinRoleServer,
			Description: "made at the first start of " + cfg.API.ID, Created: time.Now().UTC()}); err != nil {
			return fmt.Errorf("create the bootstrap join token: %w", err)
		}
		given = &tok
		cfg.API.Logger.Info("join token created: servers join with the token in "+path+"; give agents their own (berth token create)", "id", "berth-"+tok.ID)
	}
	if err := atomicfile.Write(path, []byte(given.WithPin(cfg.API.CA.Hash())+"\n"), 0o600); err != nil {
		return fmt.Errorf("write the join token file: %w", err)
	}
	return nil
}

// bootstrapACL makes the cluster's management token at its first start: written to
// DATA-DIR/admin-token, and handed to cfg.OnManagementToken to show once. Never logged.
func bootstrapACL(ctx context.Context, st *store.Store, cfg ServerConfig) error {
	sec, created, err := st.BootstrapACL(ctx, time.Now())
	if err != nil || !created {
		return err
	}
	if cfg.DataDir != "" {
		path := filepath.Join(cfg.DataDir, AdminTokenFile)
		if err := atomicfile.Write(path, []byte(sec.String()+"\n"), 0o600); err != nil {
			return fmt.Errorf("write the management token: %w", err)
		}
		cfg.API.Logger.Info("management token created: the cluster's first administrator token is in "+path, "id", "berth-acl-"+sec.ID)
	}
	if cfg.OnManagementToken != nil {
		cfg.OnManagementToken(sec.String())
	}
	return nil
}

// ensureJoinToken stores a server join token given on the command line, unless the cluster
// has it already; the same id with another secret is an error.
func ensureJoinToken(ctx context.Context, st *store.Store, tok jointoken.Token) error {
	err := st.CreateJoinToken(ctx, &store.JoinToken{ID: tok.ID, SecretHash: tok.SecretHash(), Role: v4.JoinRoleServer,
		Description: "--join-token", Created: time.Now().UTC()})
	if !errors.Is(err, store.ErrAlreadyExists) {
		return err
	}
	cur, err := st.JoinToken(ctx, tok.ID)
	if err != nil {
		return err
	}
	if !tok.Matches(cur.SecretHash) {
		return fmt.Errorf("--join-token: the cluster has a token berth-%s with another secret", tok.ID)
	}
	if cur.Role != v4.JoinRoleServer {
		return fmt.Errorf("--join-token: berth-%s is an %s token; a server's must be a server token", tok.ID, cur.Role)
	}
	return nil
}

// checkLoopback requires a host:port on a loopback address.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%s is not a loopback address: plain HTTP is for local development only (use 127.0.0.1:PORT)", addr)
	}
	return nil
}

// openAuditLog opens the audit log of cfg: --audit-log, else DATA-DIR/audit.log; none
// for "off" or without a data dir.
func openAuditLog(cfg ServerConfig) (*audit.Log, error) {
	path := cfg.AuditLogFile
	switch {
	case path == "off":
		return nil, nil
	case path == "" && cfg.DataDir == "":
		cfg.API.Logger.Warn("no audit log: give --audit-log FILE (there is no data dir to keep it in)")
		return nil, nil
	case path == "":
		path = filepath.Join(cfg.DataDir, "audit.log")
	}
	return audit.Open(path, cfg.AuditLogMaxBytes, cfg.AuditLogMaxFiles)
}
