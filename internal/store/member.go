package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/membership"
	"go.uber.org/zap"

	"github.com/berthhq/berth/api/cluster"
	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/pki"
)

// MemberConfig makes the embedded etcd one member of a cluster of berth servers, with
// URLs that stay the same across restarts (docs/ha.md).
type MemberConfig struct {
	// Name is the member's name, unique in the cluster (default: the host name).
	Name string
	// PeerListen is the host:port the other members reach this one on; ClientListen the
	// host:port etcd clients use. Both are listened on and advertised as given, so the
	// host must be an address the other servers can reach (not 0.0.0.0).
	PeerListen   string
	ClientListen string
	// Join, when set, is called on the first start (no data yet) to have the running
	// cluster add this member. A member that has data restarts without it.
	Join JoinFunc
}

// JoinFunc asks a running cluster to add the member name with peerURL (as a learner).
// Its answer is what the new member starts with: the initial cluster, the cluster's
// encryption key file (sealing.go) and its CA (etcdtls.go), which it keeps as its own.
type JoinFunc func(ctx context.Context, name, peerURL string) (cluster.Joined, error)

// memberFile records what a member was first started with, in the data directory, so
// that a restart without flags comes back as the same member.
const memberFile = "etcd-member.json"

type memberRecord struct {
	Name           string `json:"name"`
	PeerURL        string `json:"peerURL"`
	ClientURL      string `json:"clientURL"`
	InitialCluster string `json:"initialCluster"`
	ClusterState   string `json:"clusterState"` // "new" or "existing"
	// joined is the join answer (encryption keys and CA), for Open to keep (never written
	// to the record).
	joined *cluster.Joined
}

// namePattern is what berth accepts as a member name (etcd itself takes anything, but
// the name ends up in initial-cluster strings split on "," and "=").
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,62}$`)

// ValidMemberName says what is wrong with a member name, or returns nil.
func ValidMemberName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("member name %q: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// listenURL turns a host:port flag into the https URL that is listened on and advertised
// (etcdtls.go: members speak TLS only).
func listenURL(flag, value string) (string, error) {
	host, port, err := net.SplitHostPort(value)
	if err != nil {
		return "", fmt.Errorf("%s %q: want host:port: %w", flag, value, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%s %q: port must be 1-65535", flag, value)
	}
	if host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		return "", fmt.Errorf("%s %q: give an address the other servers can reach, not an unspecified one", flag, value)
	}
	return (&url.URL{Scheme: "https", Host: net.JoinHostPort(host, port)}).String(), nil
}

// ParsePeerURL checks a peer URL sent by a joining server.
func ParsePeerURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Path != "" && u.Path != "/" {
		return "", fmt.Errorf("peer URL %q: want https://host:port", s)
	}
	return listenURL("peer URL", u.Host)
}

func loadMember(dataDir string) (*memberRecord, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, memberFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read member record: %w", err)
	}
	var rec memberRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("member record %s: %w", filepath.Join(dataDir, memberFile), err)
	}
	return &rec, nil
}

// saveMember writes the record so that a crash leaves the old one or the new one, synced
// to disk: a member that comes back without it would join the cluster a second time.
func saveMember(dataDir string, rec *memberRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode member record: %w", err)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dataDir, memberFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write member record: %w", err)
	}
	return nil
}

// hasEtcdData reports whether the data dir already holds an etcd member's data.
func hasEtcdData(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, "etcd", "member", "wal"))
	return err == nil
}

// resolveMember decides what this member starts as: what its record says when it has one
// (flags, when given, must agree), else what the flags say, joining through cfg.Join on
// a first start. A joining member's record is written before etcd starts, so a crash in
// between restarts the same join; a first member's once etcd ran.
func resolveMember(ctx context.Context, dataDir string, cfg MemberConfig) (*memberRecord, error) {
	rec, err := loadMember(dataDir)
	if err != nil {
		return nil, err
	}
	var peer, client string
	if cfg.PeerListen != "" {
		if peer, err = listenURL("--etcd-peer-listen", cfg.PeerListen); err != nil {
			return nil, err
		}
	}
	if cfg.ClientListen != "" {
		if client, err = listenURL("--etcd-client-listen", cfg.ClientListen); err != nil {
			return nil, err
		}
	}
	if cfg.Name != "" {
		if err := ValidMemberName(cfg.Name); err != nil {
			return nil, fmt.Errorf("--etcd-name: %w", err)
		}
	}
	if rec != nil {
		for _, c := range []struct{ flag, given, was string }{
			{"--etcd-name", cfg.Name, rec.Name}, {"--etcd-peer-listen", peer, rec.PeerURL}, {"--etcd-client-listen", client, rec.ClientURL},
		} {
			if c.given != "" && c.given != c.was {
				return nil, fmt.Errorf("%s gives %s but this member was first started with %s (%s); a member keeps its name and URLs: "+
					"start it without the flag, or remove it from the cluster and join with an empty data dir", c.flag, c.given, c.was, filepath.Join(dataDir, memberFile))
			}
		}
		if rec.ClusterState == "new" && !hasEtcdData(dataDir) {
			// The record of a first member is written once its etcd ran: its data is gone.
			return nil, fmt.Errorf("%s records member %s but %s holds no etcd data: starting it would make a second cluster "+
				"of one; remove the record to start afresh, or restore the data", filepath.Join(dataDir, memberFile), rec.Name, filepath.Join(dataDir, "etcd"))
		}
		return rec, nil
	}
	switch {
	case peer == "" && client == "":
		return nil, errors.New("a member of an etcd cluster needs --etcd-peer-listen and --etcd-client-listen on its first start")
	case peer == "" || client == "":
		return nil, errors.New("--etcd-peer-listen and --etcd-client-listen go together")
	}
	rec = &memberRecord{Name: cfg.Name, PeerURL: peer, ClientURL: client, ClusterState: "new"}
	if rec.Name == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("no host name for the member name; give --etcd-name: %w", err)
		}
		rec.Name = strings.ToLower(host)
		if err := ValidMemberName(rec.Name); err != nil {
			return nil, fmt.Errorf("the host name cannot be the member name; give --etcd-name: %w", err)
		}
	}
	rec.InitialCluster = rec.Name + "=" + rec.PeerURL
	if cfg.Join == nil || hasEtcdData(dataDir) {
		return rec, nil // recorded once etcd runs (Store.startEtcd)
	}
	ans, err := cfg.Join(ctx, rec.Name, rec.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("join: %w", err)
	}
	rec.InitialCluster, rec.ClusterState, rec.joined = ans.InitialCluster, "existing", &ans
	// Recorded before etcd starts: the cluster now expects this member, so a restart
	// after a failed start must start it again, not join once more.
	if err := saveMember(dataDir, rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// startMember runs the embedded etcd as the recorded member. A member that joined as a
// learner is promoted to a voting member once it has caught up.
func startMember(ctx context.Context, dataDir string, quota int64, rec *memberRecord, ca *pki.CA, log *slog.Logger, zl *zap.Logger) (*embed.Etcd, *etcdTLS, error) {
	peer, err := url.Parse(rec.PeerURL)
	if err != nil {
		return nil, nil, fmt.Errorf("member record: peer URL: %w", err)
	}
	client, err := url.Parse(rec.ClientURL)
	if err != nil {
		return nil, nil, fmt.Errorf("member record: client URL: %w", err)
	}
	if peer.Scheme != "https" || client.Scheme != "https" {
		return nil, nil, fmt.Errorf("%s: this member was made by a berth without TLS (%s, %s): re-create the cluster's members with empty data dirs (docs/security.md, Upgrading)",
			filepath.Join(dataDir, memberFile), rec.PeerURL, rec.ClientURL)
	}
	mt, err := newEtcdTLS(dataDir, ca, []url.URL{*peer, *client}, log)
	if err != nil {
		return nil, nil, err
	}
	cfg := embedConfig(dataDir, rec.Name, quota, *client, *peer, zl)
	mt.apply(cfg)
	cfg.InitialCluster = rec.InitialCluster
	cfg.ClusterState = rec.ClusterState
	// Check that the configured members agree with the running cluster before joining it.
	cfg.StrictReconfigCheck = true
	e, err := runEmbedded(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if e.Server.IsLearner() {
		log.Info("joined the etcd cluster as a learner; promoting once caught up", "member", rec.Name)
		if err := promote(ctx, e); err != nil {
			e.Close()
			return nil, nil, err
		}
		log.Info("promoted to a voting etcd member", "member", rec.Name)
	}
	return e, mt, nil
}

// promoteTimeout bounds how long a learner may take to catch up with the leader.
const promoteTimeout = 2 * time.Minute

// promote asks the raft leader (etcd forwards it) to make this learner a voter, until the
// learner has caught up; it returns once this member has applied its promotion (until
// then it refuses client requests).
func promote(ctx context.Context, e *embed.Etcd) error {
	ctx, cancel := context.WithTimeout(ctx, promoteTimeout)
	defer cancel()
	id := uint64(e.Server.MemberID())
	for e.Server.IsLearner() {
		_, err := e.Server.PromoteMember(ctx, id)
		switch {
		case err == nil, errors.Is(err, membership.ErrMemberNotLearner):
			err = fmt.Errorf("promoted, not yet applied here")
		case errors.Is(err, membership.ErrIDNotFound):
			return fmt.Errorf("promote this learner: the cluster removed it: %w", err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("promote this learner to a voting member: %w (last error: %v)", ctx.Err(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}
