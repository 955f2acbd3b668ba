package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// Reads of the workflow archive (wfarchive.go).

// chunkAt reads the chunk where sortKey belongs in ns: the first at or after it, else the
// namespace's last chunk (past reports that sortKey is past every chunk). nil when the
// namespace has no archive. keysOnly reads the key and its revisions without the value.
func (s *Store) chunkAt(ctx context.Context, ns, sortKey string, keysOnly bool) (kv *mvccpb.KeyValue, past bool, err error) {
	pfx := wfArchivePrefix(ns)
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(pfx)), clientv3.WithLimit(1)}
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	resp, err := s.client.Get(ctx, pfx+sortKey, opts...)
	if err != nil {
		return nil, false, fmt.Errorf("read the workflow archive of %s: %w", ns, wrapEtcd(err))
	}
	if len(resp.Kvs) > 0 {
		return resp.Kvs[0], false, nil
	}
	opts = []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(1)}
	if keysOnly {
		opts = append(opts, clientv3.WithKeysOnly())
	}
	resp, err = s.client.Get(ctx, pfx, opts...)
	if err != nil {
		return nil, false, fmt.Errorf("read the workflow archive of %s: %w", ns, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return nil, true, nil
	}
	return resp.Kvs[0], true, nil
}

// GetArchived returns the archived workflow ns/name of status.uid uid, or with uid ""
// the one of that name archived last; ErrNotFound when there is none.
func (s *Store) GetArchived(ctx context.Context, ns, name, uid string) (*v4.ArchivedWorkflow, error) {
	if err := checkArchiveKey(ns, name, uid); err != nil {
		return nil, fmt.Errorf("read archived workflow %s/%s: %w", ns, name, err)
	}
	var found *v4.ArchivedWorkflow
	err := s.eachArchivedFrom(ctx, ns, name+"/", func(e *v4.ArchivedWorkflow) bool {
		switch k := e.SortKey(); {
		case k < name+"/":
			return true // an earlier name of the same chunk
		case e.Workflow.Metadata.Name != name:
			return false // past the name's entries
		}
		if uid == "" && (found == nil || !e.ArchivedAt.Before(found.ArchivedAt)) || e.Workflow.Status.UID == uid {
			found = e
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("read archived workflow %s/%s: %w", ns, name, err)
	}
	if found == nil {
		return nil, fmt.Errorf("archived workflow %s/%s: %w", ns, name, ErrNotFound)
	}
	return found, nil
}

// ListArchived pages the archived workflows of ns in sort key order: at most limit of
// those after the sort key after ("" from the start), and the sort key to continue
// from ("" when none is left).
func (s *Store) ListArchived(ctx context.Context, ns, after string, limit int) ([]*v4.ArchivedWorkflow, string, error) {
	if err := checkName("namespace", ns); err != nil {
		return nil, "", fmt.Errorf("list archived workflows: %w: %v", ErrInvalid, err)
	}
	var out []*v4.ArchivedWorkflow
	more := false
	err := s.eachArchivedFrom(ctx, ns, after, func(e *v4.ArchivedWorkflow) bool {
		if e.SortKey() <= after {
			return true
		}
		if len(out) == limit {
			more = true
			return false
		}
		out = append(out, e)
		return true
	})
	if err != nil {
		return nil, "", fmt.Errorf("list archived workflows of %s: %w", ns, err)
	}
	if !more || len(out) == 0 {
		return out, "", nil
	}
	return out, out[len(out)-1].SortKey(), nil
}

// wfArchivePage is how many chunks one read of the archive returns.
const wfArchivePage = 4

// eachArchivedFrom calls fn with the archived workflows of ns in sort key order, from
// the chunk that holds sortKey on, until fn returns false or the archive ends.
func (s *Store) eachArchivedFrom(ctx context.Context, ns, sortKey string, fn func(*v4.ArchivedWorkflow) bool) error {
	pfx := wfArchivePrefix(ns)
	end := clientv3.GetPrefixRangeEnd(pfx)
	from := pfx + sortKey
	for {
		resp, err := s.client.Get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(wfArchivePage))
		if err != nil {
			return wrapEtcd(err)
		}
		for _, kv := range resp.Kvs {
			entries, err := decodeChunk(string(kv.Key), kv.Value)
			if err != nil {
				return err
			}
			for _, e := range entries {
				if !fn(e) {
					return nil
				}
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// archiveIndex remembers the sort keys of a few chunks as of their mod revisions, so
// that IsArchived, asked about every artifact of every archived workflow by the
// artifact collector, inflates each chunk once per change instead of once per question.
type archiveIndex struct {
	mu     sync.Mutex
	chunks map[string]indexedChunk
}

type indexedChunk struct {
	rev  int64
	keys map[string]bool
}

// archiveIndexSize bounds the chunks remembered; when full it starts over.
const archiveIndexSize = 64

// IsArchived reports whether the workflow ns/name of status.uid uid is in the archive.
// It reads etcd (the chunk's key and revision) on every call, so an answer is never
// older than the call: a caller that found no stored workflow and then finds none in the
// archive knows the workflow is gone (archiving deletes the object and writes the chunk
// in one transaction).
func (s *Store) IsArchived(ctx context.Context, ns, name, uid string) (bool, error) {
	if err := checkArchiveKey(ns, name, uid); err != nil {
		return false, err
	}
	sortKey := name + "/" + uid
	for range maxRetries {
		kv, past, err := s.chunkAt(ctx, ns, sortKey, true)
		if err != nil || kv == nil || past {
			return false, err
		}
		keys, err := s.chunkKeys(ctx, string(kv.Key), kv.ModRevision)
		if err == nil {
			return keys[sortKey], nil
		}
		if !errors.Is(err, ErrNotFound) {
			return false, err
		}
		// The chunk changed between the two reads: look for the workflow's chunk again.
	}
	return false, fmt.Errorf("read the workflow archive of %s: %w", ns, ErrConflict)
}

// chunkKeys returns the sort keys of the chunk at key as of its mod revision rev,
// inflating it only when it is not remembered at that revision. ErrNotFound when the
// chunk changed since.
func (s *Store) chunkKeys(ctx context.Context, key string, rev int64) (map[string]bool, error) {
	s.wfArchive.mu.Lock()
	c, ok := s.wfArchive.chunks[key]
	s.wfArchive.mu.Unlock()
	if ok && c.rev == rev {
		return c.keys, nil
	}
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != rev {
		return nil, ErrNotFound
	}
	entries, err := decodeChunk(key, resp.Kvs[0].Value)
	if err != nil {
		return nil, err
	}
	c = indexedChunk{rev: rev, keys: make(map[string]bool, len(entries))}
	for _, e := range entries {
		c.keys[e.SortKey()] = true
	}
	s.wfArchive.mu.Lock()
	if s.wfArchive.chunks == nil || len(s.wfArchive.chunks) >= archiveIndexSize {
		s.wfArchive.chunks = map[string]indexedChunk{}
	}
	s.wfArchive.chunks[key] = c
	s.wfArchive.mu.Unlock()
	return c.keys, nil
}

// archiveBytes is what the archive of ns holds at rev: its usage counts these bytes, and
// no object (archiving a workflow frees one).
func (s *Store) archiveBytes(ctx context.Context, ns string, rev int64) (int64, error) {
	_, size, err := s.sizeRange(ctx, wfArchivePrefix(ns), rev)
	if err != nil {
		return 0, fmt.Errorf("count the workflow archive of %s: %w", ns, err)
	}
	return size, nil
}

// sortKeyOf is the sort key part of a chunk's key in ns.
func sortKeyOf(ns, key string) string { return strings.TrimPrefix(key, wfArchivePrefix(ns)) }
