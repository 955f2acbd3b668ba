package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Priority classes (docs/policy.md, "Priorities and preemption") are cluster-wide
// documents of their own, outside the namespaced kinds: /berth/v1/priorityclasses/{name}.
// Only administrators write them (the server's routes); admission reads them for every
// workload it admits, through a cache of at most priorityClassTTL.
const priorityClassPrefix = prefix + "priorityclasses/"

// MaxPriorityClasses bounds how many classes the cluster holds.
const MaxPriorityClasses = 1000

// priorityClassTTL is how long admission uses the classes it read: a class an
// administrator changes applies to new admissions within it on every server.
const priorityClassTTL = time.Second

type priorityClassCache struct {
	mu      sync.Mutex
	classes []*v4.PriorityClass
	read    time.Time
}

// PriorityClasses lists the classes, by name.
func (s *Store) PriorityClasses(ctx context.Context) ([]*v4.PriorityClass, error) {
	resp, err := s.client.Get(ctx, priorityClassPrefix, clientv3.WithPrefix(), clientv3.WithLimit(MaxPriorityClasses+1))
	if err != nil {
		return nil, fmt.Errorf("list priority classes: %w", wrapEtcd(err))
	}
	out := make([]*v4.PriorityClass, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		pc := &v4.PriorityClass{}
		if err := json.Unmarshal(kv.Value, pc); err != nil {
			return nil, fmt.Errorf("decode priority class %s: %w", strings.TrimPrefix(string(kv.Key), priorityClassPrefix), err)
		}
		pc.Metadata.ResourceVersion = fmt.Sprint(kv.ModRevision)
		out = append(out, pc)
	}
	slices.SortFunc(out, func(a, b *v4.PriorityClass) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	s.pcCache.mu.Lock()
	s.pcCache.classes, s.pcCache.read = out, time.Now()
	s.pcCache.mu.Unlock()
	return out, nil
}

// CachedPriorityClasses is PriorityClasses read at most priorityClassTTL ago.
func (s *Store) CachedPriorityClasses(ctx context.Context) ([]*v4.PriorityClass, error) {
	s.pcCache.mu.Lock()
	classes, read := s.pcCache.classes, s.pcCache.read
	s.pcCache.mu.Unlock()
	if !read.IsZero() && time.Since(read) < priorityClassTTL {
		return classes, nil
	}
	return s.PriorityClasses(ctx)
}

// PriorityClass returns one class.
func (s *Store) PriorityClass(ctx context.Context, name string) (*v4.PriorityClass, error) {
	classes, err := s.PriorityClasses(ctx)
	if err != nil {
		return nil, err
	}
	for _, pc := range classes {
		if pc.Metadata.Name == name {
			return pc, nil
		}
	}
	return nil, fmt.Errorf("priority class %s: %w", name, ErrNotFound)
}

// PutPriorityClass creates or replaces a class. At most one class is the global default
// and the cluster holds at most MaxPriorityClasses: both are checked against the classes
// read, and the write is conditional on none of them having changed since.
func (s *Store) PutPriorityClass(ctx context.Context, pc *v4.PriorityClass) error {
	if fe := pc.Validate(); len(fe) > 0 {
		return fmt.Errorf("%w: %v", ErrInvalid, fe)
	}
	classes, err := s.PriorityClasses(ctx)
	if err != nil {
		return err
	}
	name, exists := pc.Metadata.Name, false
	var conds []clientv3.Cmp
	for _, c := range classes {
		exists = exists || c.Metadata.Name == name
		if pc.GlobalDefault && c.GlobalDefault && c.Metadata.Name != name {
			return fmt.Errorf("%w: priority class %s is already the global default: unset it first", ErrConflict, c.Metadata.Name)
		}
		conds = append(conds, clientv3.Compare(clientv3.ModRevision(priorityClassPrefix+c.Metadata.Name), "=", mustRev(c)))
	}
	if !exists && len(classes) >= MaxPriorityClasses {
		return fmt.Errorf("%w: the cluster holds %d priority classes, the most it keeps", ErrInvalid, len(classes))
	}
	if !exists {
		conds = append(conds, clientv3.Compare(clientv3.CreateRevision(priorityClassPrefix+name), "=", 0))
	}
	stored := *pc
	stored.Metadata = v4.ObjectMeta{Name: name, Labels: pc.Metadata.Labels, Annotations: pc.Metadata.Annotations}
	stored.Kind, stored.APIVersion = v4.KindPriorityClass, v4.APIVersion
	val, err := json.Marshal(&stored)
	if err != nil {
		return fmt.Errorf("encode priority class %s: %w", name, err)
	}
	resp, err := s.client.Txn(ctx).If(conds...).Then(clientv3.OpPut(priorityClassPrefix+name, string(val))).Commit()
	if err != nil {
		return fmt.Errorf("write priority class %s: %w", name, wrapEtcd(err))
	}
	if !resp.Succeeded {
		return fmt.Errorf("write priority class %s: %w: the classes changed meanwhile, try again", name, ErrConflict)
	}
	s.forgetPriorityClasses()
	return nil
}

// DeletePriorityClass deletes a class. Workloads that name it keep the value recorded at
// their admission; a new write of them is refused until the class exists again.
func (s *Store) DeletePriorityClass(ctx context.Context, name string) error {
	resp, err := s.client.Delete(ctx, priorityClassPrefix+name)
	if err != nil {
		return fmt.Errorf("delete priority class %s: %w", name, wrapEtcd(err))
	}
	if resp.Deleted == 0 {
		return fmt.Errorf("priority class %s: %w", name, ErrNotFound)
	}
	s.forgetPriorityClasses()
	return nil
}

func (s *Store) forgetPriorityClasses() {
	s.pcCache.mu.Lock()
	s.pcCache.read = time.Time{}
	s.pcCache.mu.Unlock()
}

func mustRev(pc *v4.PriorityClass) int64 {
	rev, _ := strconv.ParseInt(pc.Metadata.ResourceVersion, 10, 64) // written by PriorityClasses
	return rev
}
