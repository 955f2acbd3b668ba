package store

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors; every error the store returns wraps one of them or an etcd error, so
// callers use errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrConflict      = errors.New("resourceVersion conflict")
	ErrCompacted     = errors.New("revision compacted")
	// ErrInvalid marks bad arguments (an unparsable resourceVersion, a name with "/").
	ErrInvalid = errors.New("invalid argument")
	// ErrUnavailable wraps failures to reach etcd (no leader, connection refused, timeout),
	// so the API can answer 503 rather than 500.
	ErrUnavailable = errors.New("etcd unavailable")
	// ErrNoSpace means etcd's database reached its space quota: etcd raised its NOSPACE
	// alarm and refuses every write (reads and deletes still work) until space is freed
	// and the alarm disarmed (space.go, docs/operations.md). The API answers 507.
	ErrNoSpace = errors.New("etcd database space exceeded (NOSPACE alarm): writes are refused until space is freed")
)

// wrapEtcd marks errors that mean "etcd cannot be reached right now" with ErrUnavailable,
// and etcd's own compaction and quota errors with ErrCompacted and ErrNoSpace.
func wrapEtcd(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rpctypes.ErrNoSpace) {
		return fmt.Errorf("%w: %v", ErrNoSpace, err)
	}
	if errors.Is(err, rpctypes.ErrCompacted) {
		return fmt.Errorf("%w: %v", ErrCompacted, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, rpctypes.ErrNoLeader) ||
		errors.Is(err, rpctypes.ErrTimeout) || errors.Is(err, rpctypes.ErrLeaderChanged) {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded:
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	return err
}
