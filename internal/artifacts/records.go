package artifacts

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Records of stored artifacts, in etcd (docs/store.md):
//
//	/berth/v1/artifacts/keys/{key}                 a Record: where key's bytes are
//	/berth/v1/artifacts/refs/{holder}/{digest}     how many keys hold that blob of holder
//	/berth/v1/artifacts/holders/{holder}           the URL of the server with that store
//
// A record and the refcounts it moves change in one transaction, guarded by their mod
// revisions, so two servers linking the same blob count it twice, never once.
const (
	recordPrefix  = "/berth/v1/artifacts/"
	keysPrefix    = recordPrefix + "keys/"
	refsPrefix    = recordPrefix + "refs/"
	holdersPrefix = recordPrefix + "holders/"
	// maxTxnAttempts bounds the retries of a transaction that lost to a concurrent one.
	maxTxnAttempts = 32
)

// Record says where a key's bytes are.
type Record struct {
	// Repository is the artifactrepository of the key's namespace ("" the embedded
	// store).
	Repository string `json:"repository,omitempty"`
	// Holder is the server whose embedded store has the blob (embedded only).
	Holder  string    `json:"holder,omitempty"`
	Digest  string    `json:"digest"`
	Size    int64     `json:"size"`
	Created time.Time `json:"created"`
}

// records reads and writes the records in etcd.
type records struct{ kv clientv3.KV }

func refKey(holder, digest string) string { return refsPrefix + holder + "/" + digest }

// get returns key's record (nil when none) and its mod revision (0 when none).
func (r records) get(ctx context.Context, key string) (*Record, int64, error) {
	resp, err := r.kv.Get(ctx, keysPrefix+key)
	if err != nil {
		return nil, 0, fmt.Errorf("read artifact record %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	var rec Record
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return nil, 0, fmt.Errorf("artifact record %s: %w", key, err)
	}
	return &rec, resp.Kvs[0].ModRevision, nil
}

// refs returns the count of a blob and its mod revision (0, 0 when none).
func (r records) refs(ctx context.Context, holder, digest string) (int64, int64, error) {
	resp, err := r.kv.Get(ctx, refKey(holder, digest))
	if err != nil {
		return 0, 0, fmt.Errorf("read refcount of %s: %w", digest, err)
	}
	if len(resp.Kvs) == 0 {
		return 0, 0, nil
	}
	n, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("refcount of %s: %w", digest, err)
	}
	return n, resp.Kvs[0].ModRevision, nil
}

// change is one transaction being built: its guards and its writes.
type change struct {
	cmps []clientv3.Cmp
	ops  []clientv3.Op
}

// addRef adds delta to a blob's count in c, guarded by the count's revision; it reports
// whether the count falls to zero (the key is then deleted).
func (r records) addRef(ctx context.Context, c *change, holder, digest string, delta int64) (zero bool, err error) {
	n, rev, err := r.refs(ctx, holder, digest)
	if err != nil {
		return false, err
	}
	k := refKey(holder, digest)
	c.cmps = append(c.cmps, clientv3.Compare(clientv3.ModRevision(k), "=", rev))
	if n+delta <= 0 {
		c.ops = append(c.ops, clientv3.OpDelete(k))
		return true, nil
	}
	c.ops = append(c.ops, clientv3.OpPut(k, strconv.FormatInt(n+delta, 10)))
	return false, nil
}

// link records rec at key, counting its blob (when it has a holder) and uncounting the
// blob key held before. It returns that earlier record when its blob is no longer
// counted (freed: the holder may remove its file).
func (r records) link(ctx context.Context, key string, rec Record) (freed *Record, err error) {
	val, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode artifact record: %w", err)
	}
	for range maxTxnAttempts {
		old, rev, err := r.get(ctx, key)
		if err != nil {
			return nil, err
		}
		c := &change{cmps: []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(keysPrefix+key), "=", rev)},
			ops: []clientv3.Op{clientv3.OpPut(keysPrefix+key, string(val))}}
		sameBlob := old != nil && old.Holder == rec.Holder && old.Digest == rec.Digest
		if rec.Holder != "" && !sameBlob {
			if _, err := r.addRef(ctx, c, rec.Holder, rec.Digest, 1); err != nil {
				return nil, err
			}
		}
		oldFreed := false
		if old != nil && old.Holder != "" && !sameBlob {
			if oldFreed, err = r.addRef(ctx, c, old.Holder, old.Digest, -1); err != nil {
				return nil, err
			}
		}
		resp, err := r.kv.Txn(ctx).If(c.cmps...).Then(c.ops...).Commit()
		if err != nil {
			return nil, fmt.Errorf("write artifact record %s: %w", key, err)
		}
		if resp.Succeeded {
			if oldFreed {
				return old, nil
			}
			return nil, nil
		}
	}
	return nil, fmt.Errorf("write artifact record %s: %d attempts lost to concurrent writes", key, maxTxnAttempts)
}

// unlink deletes key's record and uncounts its blob; it returns the record (nil when
// there was none) and whether its blob is no longer counted.
func (r records) unlink(ctx context.Context, key string) (old *Record, freed bool, err error) {
	for range maxTxnAttempts {
		old, rev, err := r.get(ctx, key)
		if err != nil || old == nil {
			return nil, false, err
		}
		c := &change{cmps: []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(keysPrefix+key), "=", rev)},
			ops: []clientv3.Op{clientv3.OpDelete(keysPrefix + key)}}
		zero := false
		if old.Holder != "" {
			if zero, err = r.addRef(ctx, c, old.Holder, old.Digest, -1); err != nil {
				return nil, false, err
			}
		}
		resp, err := r.kv.Txn(ctx).If(c.cmps...).Then(c.ops...).Commit()
		if err != nil {
			return nil, false, fmt.Errorf("delete artifact record %s: %w", key, err)
		}
		if resp.Succeeded {
			return old, zero, nil
		}
	}
	return nil, false, fmt.Errorf("delete artifact record %s: %d attempts lost to concurrent writes", key, maxTxnAttempts)
}

// keyedRecord is a record with its key.
type keyedRecord struct {
	Key string
	Record
}

// page returns at most limit records with keys after after ("" from the first), the
// last key read ("" when none) and whether the range ended.
func (r records) page(ctx context.Context, after string, limit int) (recs []keyedRecord, last string, done bool, err error) {
	from := keysPrefix
	if after != "" {
		from = keysPrefix + after + "\x00"
	}
	resp, err := r.kv.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd(keysPrefix)), clientv3.WithLimit(int64(limit)))
	if err != nil {
		return nil, "", false, fmt.Errorf("list artifact records: %w", err)
	}
	out := make([]keyedRecord, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		last = string(kv.Key[len(keysPrefix):])
		var rec Record
		if json.Unmarshal(kv.Value, &rec) != nil {
			continue // not ours to judge: a record no server wrote
		}
		out = append(out, keyedRecord{Key: last, Record: rec})
	}
	return out, last, !resp.More, nil
}
