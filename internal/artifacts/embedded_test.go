package artifacts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/berthhq/berth/internal/store/storetest"
)

func openTestEmbedded(t *testing.T, dir string) *Embedded {
	t.Helper()
	e, err := OpenEmbedded(dir, testStore.Client(), storetest.QuietLogger())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func readAll(t *testing.T, r Repository, key string) []byte {
	t.Helper()
	rc, _, err := r.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// blobFiles lists the blob files of e.
func blobFiles(t *testing.T, e *Embedded) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(e.dir, "blobs", "sha256", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func refsOf(t *testing.T, e *Embedded, digest string) int64 {
	t.Helper()
	n, _, err := e.rec.refs(context.Background(), e.holder, digest)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEmbeddedPutGetDelete(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	e := openTestEmbedded(t, t.TempDir())
	data := []byte("model weights")
	info, err := e.Put(ctx, "ns/wf/u1/n1/model", bytes.NewReader(data), 100)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size != int64(len(data)) || info.Digest != digestOf(data) {
		t.Fatalf("info = %+v, want size %d digest %s", info, len(data), digestOf(data))
	}
	if got := readAll(t, e, "ns/wf/u1/n1/model"); !bytes.Equal(got, data) {
		t.Fatalf("got %q", got)
	}
	if err := e.Delete(ctx, "ns/wf/u1/n1/model"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Get(ctx, "ns/wf/u1/n1/model"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
	if f := blobFiles(t, e); len(f) != 0 {
		t.Fatalf("blobs left after delete: %v", f)
	}
	if err := e.Delete(ctx, "ns/wf/u1/n1/model"); err != nil {
		t.Fatalf("delete again: %v", err)
	}
}

func TestEmbeddedRefcount(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	e := openTestEmbedded(t, t.TempDir())
	same, other := []byte("same bytes"), []byte("other bytes")
	for _, k := range []string{"ns/a", "ns/b"} {
		if _, err := e.Put(ctx, k, bytes.NewReader(same), 100); err != nil {
			t.Fatal(err)
		}
	}
	if n, f := refsOf(t, e, digestOf(same)), blobFiles(t, e); n != 2 || len(f) != 1 {
		t.Fatalf("two keys of one content: refs %d, files %d; want 2, 1", n, len(f))
	}
	// Storing the same content at the same key again counts nothing more.
	if _, err := e.Put(ctx, "ns/a", bytes.NewReader(same), 100); err != nil {
		t.Fatal(err)
	}
	if n := refsOf(t, e, digestOf(same)); n != 2 {
		t.Fatalf("refs after a repeated put = %d, want 2", n)
	}
	if err := e.Delete(ctx, "ns/a"); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, e, "ns/b"); !bytes.Equal(got, same) {
		t.Fatalf("the other key lost its blob: %q", got)
	}
	// Replacing the last key's content frees the old blob.
	if _, err := e.Put(ctx, "ns/b", bytes.NewReader(other), 100); err != nil {
		t.Fatal(err)
	}
	if n, f := refsOf(t, e, digestOf(same)), blobFiles(t, e); n != 0 || len(f) != 1 || !strings.HasSuffix(f[0], digestOf(other)[7:]) {
		t.Fatalf("after replacing: refs of the old %d, files %v; want 0 and only the new blob", n, f)
	}
}

func TestEmbeddedTooLargeLeavesNothing(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	e := openTestEmbedded(t, t.TempDir())
	for _, size := range []int{11, 1 << 20} {
		_, err := e.Put(ctx, "ns/big", bytes.NewReader(make([]byte, size)), 10)
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("put of %d bytes over 10: %v, want ErrTooLarge", size, err)
		}
	}
	if rec, _, err := e.rec.get(ctx, "ns/big"); err != nil || rec != nil {
		t.Fatalf("record after refused put: %+v %v", rec, err)
	}
	tmp, _ := os.ReadDir(filepath.Join(e.dir, "tmp"))
	if f := blobFiles(t, e); len(f) != 0 || len(tmp) != 0 {
		t.Fatalf("files after refused put: blobs %v, temp %d", f, len(tmp))
	}
	// Exactly at the bound is accepted.
	if _, err := e.Put(ctx, "ns/ten", bytes.NewReader(make([]byte, 10)), 10); err != nil {
		t.Fatalf("put at the bound: %v", err)
	}
}

// A crash between writing the temp file and renaming it leaves a temp file, and one
// between the rename and the record a blob no record counts: the next start removes the
// first, the sweep the second, and what was stored before is kept.
func TestEmbeddedCrashBetweenTempAndRename(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	dir := t.TempDir()
	e := openTestEmbedded(t, dir)
	kept := []byte("kept")
	if _, err := e.Put(ctx, "ns/kept", bytes.NewReader(kept), 100); err != nil {
		t.Fatal(err)
	}
	orphan := []byte("renamed, never recorded")
	if err := os.WriteFile(filepath.Join(dir, "tmp", "put-123"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	op := e.blobPath(digestOf(orphan))
	os.MkdirAll(filepath.Dir(op), 0o700)
	if err := os.WriteFile(op, orphan, 0o600); err != nil {
		t.Fatal(err)
	}
	e2 := openTestEmbedded(t, dir) // the restart
	if e2.Holder() != e.Holder() {
		t.Fatalf("holder changed over a restart: %s → %s", e.Holder(), e2.Holder())
	}
	if tmp, _ := os.ReadDir(filepath.Join(dir, "tmp")); len(tmp) != 0 {
		t.Fatalf("temp files after a restart: %d", len(tmp))
	}
	g := NewGC(NewRouter(RouterConfig{Store: testStore, Embedded: e2, Logger: storetest.QuietLogger()}))
	for range 256 / gcShardsPerRound {
		if err := g.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(op); !os.IsNotExist(err) {
		t.Fatalf("the orphan blob survived a sweep: %v", err)
	}
	if got := readAll(t, e2, "ns/kept"); !bytes.Equal(got, kept) {
		t.Fatalf("kept artifact after restart and sweep: %q", got)
	}
}

func TestEmbeddedConcurrentPutsOfOneContent(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	e := openTestEmbedded(t, t.TempDir())
	data := bytes.Repeat([]byte("x"), 300<<10)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = e.Put(ctx, "ns/k"+string(rune('a'+i)), bytes.NewReader(data), 1<<20)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got, f := refsOf(t, e, digestOf(data)), blobFiles(t, e); got != n || len(f) != 1 {
		t.Fatalf("refs %d, blob files %d; want %d, 1", got, len(f), n)
	}
	for i := range n {
		if err := e.Delete(ctx, "ns/k"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	if f := blobFiles(t, e); len(f) != 0 {
		t.Fatalf("blob left after every key was deleted: %v", f)
	}
}

// A blob another server holds is not served here, and the error names its holder.
func TestEmbeddedElsewhere(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	a, b := openTestEmbedded(t, t.TempDir()), openTestEmbedded(t, t.TempDir())
	if _, err := a.Put(ctx, "ns/x", strings.NewReader("x"), 10); err != nil {
		t.Fatal(err)
	}
	var ee *ElsewhereError
	if _, _, err := b.Get(ctx, "ns/x"); !errors.As(err, &ee) || ee.Holder != a.Holder() {
		t.Fatalf("get on the other server: %v, want an ElsewhereError naming %s", err, a.Holder())
	}
}
