package store

import (
	"context"
	"fmt"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/quota"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// usageKinds are the kinds whose objects ask for a namespace's resources
// (quota.Usage): workloads by their spec, task groups of jobs and workflows while active.
var usageKinds = []v4.Kind{v4.KindApplication, v4.KindProcess, v4.KindDeployment, v4.KindDaemonset, v4.KindTaskGroup}

// ResourceUsage is what ns's objects ask of the cluster (docs/policy.md, "Counting"),
// counted from what it holds as of one etcd revision: a namespace's resource usage is
// recomputed from the stored state at each check, never kept in a counter, so it cannot
// drift, and a leader change or a server that stopped mid-write leaves nothing to repair.
func (s *Store) ResourceUsage(ctx context.Context, ns string) (quota.List, error) {
	objs, err := s.NamespaceObjects(ctx, ns)
	if err != nil {
		return nil, err
	}
	return quota.Usage(objs), nil
}

// NamespaceObjects lists ns's objects that ask for resources (usageKinds), as of one
// revision: the server's admission replaces the ones a request writes and counts again.
func (s *Store) NamespaceObjects(ctx context.Context, ns string) ([]v4.Object, error) {
	if err := checkName("namespace", ns); err != nil {
		return nil, fmt.Errorf("namespace objects: %w: %w", ErrInvalid, err)
	}
	var objs []v4.Object
	var rev int64
	for _, kind := range usageKinds {
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if rev != 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.client.Get(ctx, objectPrefix(kind, ns), opts...)
		if err != nil {
			return nil, fmt.Errorf("objects of namespace %s: %w", ns, wrapEtcd(err))
		}
		rev = resp.Header.Revision
		for _, kv := range resp.Kvs {
			obj, err := s.decodeObject(kind, kv)
			if err != nil {
				return nil, fmt.Errorf("objects of namespace %s: %w", ns, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs, nil
}
