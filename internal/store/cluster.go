package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/api/cluster"
)

// memberStatusTimeout bounds the status request to each member.
const memberStatusTimeout = 2 * time.Second

// Members lists the etcd cluster's members with their health, the same for an embedded
// cluster and an external one. The list is this member's view (a serializable read), so
// it answers without quorum too: that is when it is most needed.
func (s *Store) Members(ctx context.Context) ([]cluster.Member, error) {
	resp, err := s.admin.MemberList(ctx, clientv3.WithSerializable())
	if err != nil {
		return nil, fmt.Errorf("list etcd members: %w", wrapEtcd(err))
	}
	out := make([]cluster.Member, len(resp.Members))
	var wg sync.WaitGroup
	for i, m := range resp.Members {
		out[i] = cluster.Member{ID: fmt.Sprintf("%x", m.ID), Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs,
			Learner: m.IsLearner, Started: m.Name != ""}
		if len(m.ClientURLs) == 0 {
			out[i].Error = "not started"
			continue
		}
		wg.Go(func() { s.memberHealth(ctx, m, &out[i]) })
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b cluster.Member) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// memberHealth asks each of the member's client URLs for its status until one answers.
func (s *Store) memberHealth(ctx context.Context, m *etcdserverpb.Member, out *cluster.Member) {
	var lastErr error
	for _, u := range m.ClientURLs {
		sctx, cancel := context.WithTimeout(ctx, memberStatusTimeout)
		st, err := s.admin.Status(sctx, u)
		cancel()
		if err != nil {
			lastErr = err
			continue
		}
		out.RaftLeader = st.Leader == m.ID
		z := statusSizes(st)
		out.DBSize, out.DBSizeInUse, out.DBQuota = z.Size, z.InUse, z.Quota
		switch {
		case len(st.Errors) > 0:
			out.Error = memberErrors(st.Errors)
		case st.Leader == 0:
			out.Error = "no raft leader (no quorum)"
		default:
			out.Healthy = true
		}
		return
	}
	out.Error = fmt.Sprintf("unreachable: %v", lastErr)
}

// memberErrors joins the errors of a member's status. The alarms among them, which
// etcd writes as protobuf text ("memberID:1234 alarm:NOSPACE"), are named by their
// meaning: every member reports every alarm of the cluster.
func memberErrors(errs []string) string {
	var out []string
	for _, e := range errs {
		if strings.Contains(e, "alarm") && strings.Contains(e, "NOSPACE") {
			e = "database space exceeded (NOSPACE alarm)"
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return strings.Join(out, "; ")
}

// MemberName is the embedded member's name, "" when not a member of a cluster.
func (s *Store) MemberName() string {
	if s.member == nil {
		return ""
	}
	return s.member.Name
}

// Embedded reports whether this store runs its own etcd member.
func (s *Store) Embedded() bool { return s.etcd != nil }

// ErrNotJoinable means this server's etcd cannot take new members (see AddMember).
var ErrNotJoinable = errors.New("cannot add members")

// AddMember adds a joining server's member, as a learner (it does not count for quorum
// until it has caught up and promoted itself, so a join that never starts cannot cost
// the cluster its quorum), and returns the initial cluster it must start with. A retried
// join of the same name and peer URL that never started gets the same answer again.
//
// Errors: ErrInvalid for a bad name or URL, ErrAlreadyExists when a started member has
// the name or the peer URL, ErrNotJoinable when this server has no stable member
// (external etcd, or random ports), ErrUnavailable when another learner is still
// catching up, a member started or failed in the last 5 s, or etcd has no quorum (all
// worth a retry).
func (s *Store) AddMember(ctx context.Context, name, peerURL string) (initialCluster string, err error) {
	if err := ValidMemberName(name); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	peer, err := ParsePeerURL(peerURL)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch {
	case s.etcd == nil:
		return "", fmt.Errorf("%w: this server uses an external etcd; start the new server with the same --etcd-endpoints instead of --join", ErrNotJoinable)
	case s.member == nil:
		return "", fmt.Errorf("%w: this server's etcd listens on random loopback ports; restart it with --etcd-peer-listen and --etcd-client-listen first", ErrNotJoinable)
	}
	list, err := s.admin.MemberList(ctx)
	if err != nil {
		return "", fmt.Errorf("list etcd members: %w", wrapEtcd(err))
	}
	var newID uint64
	for _, m := range list.Members {
		samePeer := slices.Contains(m.PeerURLs, peer)
		switch {
		case m.Name == name && !samePeer:
			return "", fmt.Errorf("%w: a member named %q already exists (peer %s); give the new server another --etcd-name", ErrAlreadyExists, name, strings.Join(m.PeerURLs, ","))
		case samePeer && m.Name != "" && m.Name != name:
			return "", fmt.Errorf("%w: peer URL %s belongs to member %q", ErrAlreadyExists, peer, m.Name)
		case samePeer && m.Name == name:
			return "", fmt.Errorf("%w: member %q with peer %s is already in the cluster; restart it without --join (its data dir has its data)", ErrAlreadyExists, name, peer)
		case samePeer: // added earlier, never started: the same join again
			newID = m.ID
		}
	}
	members := list.Members
	if newID == 0 {
		resp, err := s.admin.MemberAddAsLearner(ctx, []string{peer})
		if err != nil {
			switch {
			case errors.Is(err, rpctypes.ErrTooManyLearners):
				return "", fmt.Errorf("%w: another server is still joining (a learner catching up); retry in a moment", ErrUnavailable)
			case errors.Is(err, rpctypes.ErrUnhealthy):
				// etcd adds members only when every voter has been connected for 5 s.
				return "", fmt.Errorf("%w: the cluster is not healthy enough to add a member yet (a member started or failed recently); retry in a moment", ErrUnavailable)
			}
			return "", fmt.Errorf("add etcd member %s: %w", name, wrapEtcd(err))
		}
		newID, members = resp.Member.ID, resp.Members
		s.log.Info("added etcd member as a learner", "member", name, "peer", peer, "id", fmt.Sprintf("%x", newID))
	}
	// As etcdctl member add prints it: every member's peer URLs, the new one by its name.
	var parts []string
	for _, m := range members {
		n := m.Name
		if m.ID == newID {
			n = name
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ","), nil
}

// adoptPeerURL fixes the advertised peer URL of a single member whose data was created
// without a stable one (a server first run without --etcd-peer-listen), so that others
// can join it.
func (s *Store) adoptPeerURL(ctx context.Context) error {
	id := uint64(s.etcd.Server.MemberID())
	list, err := s.admin.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("list etcd members: %w", wrapEtcd(err))
	}
	for _, m := range list.Members {
		if m.ID != id || slices.Equal(m.PeerURLs, []string{s.member.PeerURL}) {
			continue
		}
		if len(list.Members) > 1 {
			s.log.Warn("this member's peer URL differs from the cluster's record of it", "recorded", m.PeerURLs, "listen", s.member.PeerURL)
			return nil
		}
		if _, err := s.admin.MemberUpdate(ctx, id, []string{s.member.PeerURL}); err != nil {
			return fmt.Errorf("update this member's peer URL to %s: %w", s.member.PeerURL, wrapEtcd(err))
		}
		s.log.Info("updated this member's peer URL", "peer", s.member.PeerURL)
	}
	return nil
}
