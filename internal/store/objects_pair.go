package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// CreateWithUpdate creates obj and writes owner (with the resourceVersion it was read
// at, status included) in one transaction: both or neither. The cron controller creates
// a run and moves its cronjob's lastScheduleTime so, so that a leader that dies between
// the two writes cannot leave a run its successor does not know it started, nor a
// schedule time moved without its run. It fails with ErrAlreadyExists when obj exists
// (checked first, also when owner moved: another leader made the run) and ErrConflict when owner changed or is
// gone; nothing is written then.
func (s *Store) CreateWithUpdate(ctx context.Context, obj, owner v4.Object) error {
	kind, meta := obj.GetKind(), obj.GetMeta()
	okind, ometa := owner.GetKind(), owner.GetMeta()
	what := fmt.Sprintf("create %s %s/%s with %s %s", kind, meta.Namespace, meta.Name, okind, ometa.Name)
	if err := checkObject(obj); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := checkObject(owner); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	want, err := parseRev(ometa.ResourceVersion)
	if err != nil || want == 0 {
		return fmt.Errorf("%s: %w: the owner's resourceVersion is the precondition", what, ErrInvalid)
	}
	key, okey := objectKey(kind, meta.Namespace, meta.Name), objectKey(okind, ometa.Namespace, ometa.Name)
	for attempt := 0; ; attempt++ {
		_, _, size, err := s.getWanted(ctx, okind, ometa.Namespace, ometa.Name, want)
		if err != nil {
			if errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) {
				err = s.existsOr(ctx, key, err) // the one that moved the owner made obj, most likely
			}
			return fmt.Errorf("%s: %w", what, err)
		}
		now := time.Now().UTC().Truncate(time.Second)
		val, err := encodeObject(obj, now)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		oval, err := encodeObject(owner, ometa.CreationTimestamp)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		ops := []clientv3.Op{s.putObject(kind, meta.Namespace, meta.Name, val),
			s.putRaw(kind, meta.Namespace, meta.Name, Raw{ContentType: ContentTypeJSON, Data: val})}
		var deltas usageDeltas
		deltas.add(kind, meta.Namespace, 1, opBytes(ops...))
		oput := s.putObject(okind, ometa.Namespace, ometa.Name, oval)
		deltas.add(okind, ometa.Namespace, 0, opBytes(oput)-size.object)
		u, err := s.planUsage(ctx, deltas)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		resp, err := s.client.Txn(ctx).
			If(append([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
				clientv3.Compare(clientv3.ModRevision(okey), "=", want)}, u.cmps...)...).
			Then(append(append(ops, oput), u.ops...)...).
			Else(clientv3.OpGet(key, clientv3.WithCountOnly()), clientv3.OpGet(okey, clientv3.WithKeysOnly())).
			Commit()
		if err != nil {
			s.usageFailed(u) // no answer: it may have committed, so the ledger is read again
			return fmt.Errorf("%s: %w", what, wrapEtcd(err))
		}
		if resp.Succeeded {
			s.usageDone(u, resp.Header.Revision)
			meta.CreationTimestamp = now
			meta.ResourceVersion = formatRev(resp.Header.Revision)
			ometa.ResourceVersion = formatRev(resp.Header.Revision)
			return nil
		}
		s.usageFailed(u)
		if resp.Responses[0].GetResponseRange().Count > 0 {
			return fmt.Errorf("%s: %w", what, ErrAlreadyExists)
		}
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 0 || kvs[0].ModRevision != want {
			return fmt.Errorf("%s: %w", what, ErrConflict)
		}
		// Only a namespace's ledger moved (quota_ledger.go): the write is tried again.
		if err := usageWait(ctx, attempt); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
}

// existsOr returns ErrAlreadyExists when key exists, else err.
func (s *Store) existsOr(ctx context.Context, key string, err error) error {
	resp, gerr := s.client.Get(ctx, key, clientv3.WithCountOnly())
	switch {
	case gerr != nil:
		return wrapEtcd(gerr)
	case resp.Count > 0:
		return ErrAlreadyExists
	}
	return err
}
