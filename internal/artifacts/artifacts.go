// Package artifacts keeps the artifacts of workflow steps (docs/workflows.md, "Artifact
// repositories"): a Repository streams bytes in and out under a key, bounded in size and
// digested on the way, never whole in memory. Two backends: the servers' embedded,
// content-addressed store (Embedded: blobs by sha256 under the data dir, a key → blob
// record and refcounts in etcd, garbage-collected with their workflows) and any
// S3-compatible bucket (S3, configured by an artifactrepository object). Router picks the
// one a step's spec names.
package artifacts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// Repository keeps artifacts by key.
type Repository interface {
	// Put stores what r gives at key, at most max bytes: past it nothing is kept and
	// the error is an ErrTooLarge. A key stored again is replaced.
	Put(ctx context.Context, key string, r io.Reader, max int64) (Info, error)
	// Get opens what is stored at key (ErrNotFound when nothing is); the caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, Info, error)
	// Delete forgets key; deleting a missing key is no error.
	Delete(ctx context.Context, key string) error
}

// Info is what was stored: its size and "sha256:<hex>" digest (the digest may be empty
// on a Get from a store that does not keep it).
type Info struct {
	Size   int64
	Digest string
}

// ErrNotFound is the error of a Get of a key that holds nothing.
var ErrNotFound = errors.New("artifact not found")

// TooLargeError is the error of a Put past its bound.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("artifact is larger than %d bytes", e.Max)
}

// ErrTooLarge matches every TooLargeError with errors.Is.
var ErrTooLarge = errors.New("artifact too large")

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// digester reads from r, at most max bytes, hashing what it reads: once more than max
// bytes came, its reads fail with a TooLargeError (so an upload built on it fails too).
type digester struct {
	r   io.Reader
	h   hash.Hash
	n   int64
	max int64
}

func newDigester(r io.Reader, max int64) *digester {
	return &digester{r: r, h: sha256.New(), max: max}
}

func (d *digester) Read(p []byte) (int, error) {
	if d.n > d.max {
		return 0, &TooLargeError{Max: d.max}
	}
	if rest := d.max + 1 - d.n; int64(len(p)) > rest {
		p = p[:rest] // one byte past max tells that there is more
	}
	n, err := d.r.Read(p)
	d.n += int64(n)
	d.h.Write(p[:n])
	if d.n > d.max {
		return n, &TooLargeError{Max: d.max}
	}
	return n, err
}

// info is what the digester read so far.
func (d *digester) info() Info {
	return Info{Size: d.n, Digest: "sha256:" + hex.EncodeToString(d.h.Sum(nil))}
}
