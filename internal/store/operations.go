package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	v4 "github.com/berthhq/berth/api/v4"
)

// ErrLocked means another operation on the object is in progress (HTTP 423).
var ErrLocked = errors.New("operation in progress")

// LockedError names the operation in the way.
type LockedError struct{ Current v4.Operation }

func (e *LockedError) Error() string {
	c := e.Current
	msg := fmt.Sprintf("%s %s: a %s operation started %s ago is in progress", c.Kind, c.Name, c.Type,
		time.Since(c.Started).Round(time.Second))
	if c.Message != "" {
		msg += " (" + c.Message + ")"
	}
	return msg + "; wait for it to end or follow it with a watch"
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// operationKey holds the operation in progress on one object:
// /berth/v1/operations/{kind}/{namespace}/{name}.
func operationKey(kind v4.Kind, ns, name string) string {
	return prefix + "operations/" + scopedName(kind, ns, name)
}

// BeginOperation records op as the object's operation in progress, atomically: when one
// is already recorded and its type is not in supersedes, it fails with a *LockedError.
// A superseded operation is replaced (a new rollout replaces the one under way).
func (s *Store) BeginOperation(ctx context.Context, ns, name string, op v4.Operation, supersedes ...string) error {
	if err := checkKey(op.Kind, ns, name); err != nil {
		return err
	}
	key := operationKey(op.Kind, ns, name)
	if op.Started.IsZero() {
		op.Started = time.Now().UTC()
	}
	val, err := json.Marshal(op)
	if err != nil {
		return fmt.Errorf("encode operation: %w", err)
	}
	for range 5 {
		cur, rev, err := s.operation(ctx, key)
		if err != nil {
			return err
		}
		if cur != nil && !slices.Contains(supersedes, cur.Type) {
			return &LockedError{Current: *cur}
		}
		resp, err := s.client.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, string(val))).Commit()
		if err != nil {
			return fmt.Errorf("begin %s of %s %s/%s: %w", op.Type, op.Kind, ns, name, wrapEtcd(err))
		}
		if resp.Succeeded {
			return nil
		}
	}
	return fmt.Errorf("begin %s of %s %s/%s: %w", op.Type, op.Kind, ns, name, ErrConflict)
}

// EndOperation removes the object's operation in progress if it is of type typ (so an
// operation that superseded it is left alone). Ending none is not an error.
func (s *Store) EndOperation(ctx context.Context, kind v4.Kind, ns, name, typ string) error {
	key := operationKey(kind, ns, name)
	cur, rev, err := s.operation(ctx, key)
	if err != nil || cur == nil || cur.Type != typ {
		return err
	}
	_, err = s.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpDelete(key)).Commit()
	if err != nil {
		return fmt.Errorf("end %s of %s %s/%s: %w", typ, kind, ns, name, wrapEtcd(err))
	}
	return nil
}

// Operation returns the object's operation in progress, or nil.
func (s *Store) Operation(ctx context.Context, kind v4.Kind, ns, name string) (*v4.Operation, error) {
	op, _, err := s.operation(ctx, operationKey(kind, ns, name))
	return op, err
}

func (s *Store) operation(ctx context.Context, key string) (*v4.Operation, int64, error) {
	resp, err := s.client.Get(ctx, key)
	if err != nil {
		return nil, 0, fmt.Errorf("read operation %s: %w", key, wrapEtcd(err))
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, nil
	}
	var op v4.Operation
	if err := json.Unmarshal(resp.Kvs[0].Value, &op); err != nil {
		return nil, 0, fmt.Errorf("decode operation %s: %w", key, err)
	}
	return &op, resp.Kvs[0].ModRevision, nil
}

// UpdateOperation rewrites the object's operation in progress with op when the stored
// one is the same operation (its type and start time): a controller records its progress
// without overwriting an operation begun since. It reports whether it wrote.
func (s *Store) UpdateOperation(ctx context.Context, ns, name string, op v4.Operation) (bool, error) {
	key := operationKey(op.Kind, ns, name)
	val, err := json.Marshal(op)
	if err != nil {
		return false, fmt.Errorf("encode operation: %w", err)
	}
	cur, rev, err := s.operation(ctx, key)
	if err != nil || cur == nil || cur.Type != op.Type || !cur.Started.Equal(op.Started) {
		return false, err
	}
	resp, err := s.client.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
		Then(clientv3.OpPut(key, string(val))).Commit()
	if err != nil {
		return false, fmt.Errorf("update %s of %s %s/%s: %w", op.Type, op.Kind, ns, name, wrapEtcd(err))
	}
	return resp.Succeeded, nil
}
