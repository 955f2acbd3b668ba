package artifacts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/berthhq/berth/internal/atomicfile"
	"github.com/berthhq/berth/internal/keylock"
)

// Embedded is the servers' own store: each blob is a file named by its sha256 under
// dir/blobs/sha256/<2 hex>/, written to dir/tmp first, fsynced and renamed (a crash
// leaves a whole blob or a temp file that the next start removes); a record in etcd maps
// a key to its blob and a refcount says how many keys hold it. Blobs are local to the
// server that received them (Record.Holder): a Get on another server answers an
// ElsewhereError naming the holder (docs/workflows.md, "Artifact repositories").
type Embedded struct {
	dir    string
	holder string
	rec    records
	log    *slog.Logger
	// locks serialize, per digest, the rename and link of a Put with the removal of an
	// unreferenced blob, so a removal never takes a blob a Put just linked.
	locks keylock.Locks
}

// holderFile keeps the store's name, chosen once, so a restarted server (another pid,
// the same files) is the same holder.
const holderFile = "holder"

// copyBuffer is the size of the buffer a Put copies through.
const copyBuffer = 256 << 10

// OpenEmbedded opens (creating it) the store in dir, its records in kv. Temp files left
// by a crash are removed: no Put is in flight before Open returns.
func OpenEmbedded(dir string, kv clientv3.KV, log *slog.Logger) (*Embedded, error) {
	for _, d := range []string{filepath.Join(dir, "blobs", "sha256"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("artifact store: %w", err)
		}
	}
	if err := clearDir(filepath.Join(dir, "tmp")); err != nil {
		return nil, fmt.Errorf("artifact store: %w", err)
	}
	holder, err := readHolder(dir)
	if err != nil {
		return nil, fmt.Errorf("artifact store: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &Embedded{dir: dir, holder: holder, rec: records{kv: kv}, log: log}, nil
}

// Holder names this store in the records.
func (e *Embedded) Holder() string { return e.holder }

func readHolder(dir string) (string, error) {
	path := filepath.Join(dir, holderFile)
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) == 24 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	id := make([]byte, 12)
	rand.Read(id)
	h := hex.EncodeToString(id)
	if err := atomicfile.Write(path, []byte(h+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return h, nil
}

func clearDir(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// blobPath is where the blob of digest ("sha256:<hex>") is; "" for a malformed digest.
func (e *Embedded) blobPath(digest string) string {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return ""
	}
	return filepath.Join(e.dir, "blobs", "sha256", h[:2], h)
}

// Put stores r at key: into a temp file, then renamed to its blob (or dropped when the
// blob is there already), then linked in etcd.
func (e *Embedded) Put(ctx context.Context, key string, r io.Reader, max int64) (Info, error) {
	info, tmp, err := e.writeTemp(r, max)
	if err != nil {
		return Info{}, err
	}
	defer os.Remove(tmp) // gone once renamed
	freed, err := e.placeAndLink(ctx, key, info, tmp)
	if err != nil {
		return Info{}, err
	}
	if freed != nil {
		e.removeIfFree(ctx, freed.Holder, freed.Digest)
	}
	return info, nil
}

// writeTemp copies at most max bytes of r into a new synced temp file.
func (e *Embedded) writeTemp(r io.Reader, max int64) (Info, string, error) {
	f, err := os.CreateTemp(filepath.Join(e.dir, "tmp"), "put-")
	if err != nil {
		return Info{}, "", fmt.Errorf("artifact store: %w", err)
	}
	d := newDigester(r, max)
	_, err = io.CopyBuffer(f, d, make([]byte, copyBuffer))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		if errors.Is(err, ErrTooLarge) {
			return Info{}, "", err
		}
		return Info{}, "", fmt.Errorf("artifact store: write: %w", err)
	}
	return d.info(), f.Name(), nil
}

// placeAndLink renames tmp to its blob and links key to it, under the digest's lock.
func (e *Embedded) placeAndLink(ctx context.Context, key string, info Info, tmp string) (*Record, error) {
	unlock, err := e.locks.Lock(ctx, info.Digest)
	if err != nil {
		return nil, err
	}
	defer unlock()
	blob := e.blobPath(info.Digest)
	if _, err := os.Stat(blob); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(blob), 0o700); err != nil {
			return nil, fmt.Errorf("artifact store: %w", err)
		}
		if err := os.Rename(tmp, blob); err != nil {
			return nil, fmt.Errorf("artifact store: %w", err)
		}
		if err := syncDir(filepath.Dir(blob)); err != nil {
			return nil, fmt.Errorf("artifact store: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("artifact store: %w", err)
	}
	return e.rec.link(ctx, key, Record{Holder: e.holder, Digest: info.Digest, Size: info.Size, Created: time.Now().UTC()})
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ElsewhereError is a Get of a key whose blob another server holds: the caller may
// fetch it from that server (Router.HolderURL, OpenBlob there).
type ElsewhereError struct {
	Key, Holder string
	Info        Info
}

func (e *ElsewhereError) Error() string {
	return fmt.Sprintf("artifact %s is kept by another server (store %s), which did not serve it", e.Key, e.Holder)
}

// Get opens key's blob.
func (e *Embedded) Get(ctx context.Context, key string) (io.ReadCloser, Info, error) {
	rec, _, err := e.rec.get(ctx, key)
	if err != nil {
		return nil, Info{}, err
	}
	if rec == nil || rec.Repository != "" {
		return nil, Info{}, fmt.Errorf("%w: no artifact at %s", ErrNotFound, key)
	}
	if rec.Holder != e.holder {
		return nil, Info{}, &ElsewhereError{Key: key, Holder: rec.Holder, Info: Info{Size: rec.Size, Digest: rec.Digest}}
	}
	f, err := os.Open(e.blobPath(rec.Digest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, Info{}, fmt.Errorf("%w: the blob of %s is missing from this server's store", ErrNotFound, key)
	}
	if err != nil {
		return nil, Info{}, fmt.Errorf("artifact store: %w", err)
	}
	return f, Info{Size: rec.Size, Digest: rec.Digest}, nil
}

// OpenBlob opens this store's blob of digest, for another server that was asked for a
// key this one holds (ErrNotFound when it is not here).
func (e *Embedded) OpenBlob(digest string) (*os.File, error) {
	path := e.blobPath(digest)
	if path == "" {
		return nil, fmt.Errorf("%w: malformed digest %q", ErrNotFound, digest)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no blob %s on this server", ErrNotFound, digest)
	}
	return f, err
}

// Advertise records url as where the other servers reach this store's blobs.
func (e *Embedded) Advertise(ctx context.Context, url string) error {
	if _, err := e.rec.kv.Put(ctx, holdersPrefix+e.holder, url); err != nil {
		return fmt.Errorf("advertise the artifact store: %w", err)
	}
	return nil
}

// Delete unlinks key, removing its blob when no key holds it any more.
func (e *Embedded) Delete(ctx context.Context, key string) error {
	old, freed, err := e.rec.unlink(ctx, key)
	if err != nil {
		return err
	}
	if freed {
		e.removeIfFree(ctx, old.Holder, old.Digest)
	}
	return nil
}

// removeIfFree removes this store's blob of digest if no key counts it (checked under
// the digest's lock); another holder's blob is left to that holder's sweep.
func (e *Embedded) removeIfFree(ctx context.Context, holder, digest string) {
	if holder != e.holder {
		return
	}
	if _, err := e.removeUnreferenced(ctx, digest); err != nil {
		e.log.Warn("artifact store: blob not removed (the sweep will try again)", "digest", digest, "err", err)
	}
}

// removeUnreferenced removes the blob of digest when no record counts it.
func (e *Embedded) removeUnreferenced(ctx context.Context, digest string) (bool, error) {
	path := e.blobPath(digest)
	if path == "" {
		return false, fmt.Errorf("malformed digest %q", digest)
	}
	unlock, err := e.locks.Lock(ctx, digest)
	if err != nil {
		return false, err
	}
	defer unlock()
	n, _, err := e.rec.refs(ctx, e.holder, digest)
	if err != nil || n > 0 {
		return false, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}
