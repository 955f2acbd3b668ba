package stepio

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// rawHeader is a ustar header block of type typ for an entry of size bytes, for the
// special entries tar.Writer refuses to write by hand (PAX and GNU meta headers).
func rawHeader(typ byte, name string, size int) []byte {
	b := make([]byte, 512)
	copy(b, name)
	copy(b[100:], "0000644\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", size))
	copy(b[136:], fmt.Sprintf("%011o\x00", 0))
	copy(b[148:], "        ")
	b[156] = typ
	copy(b[257:], "ustar\x0000")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// paxBlock is a PAX extended header (typ 'x' or 'g') with one comment record of n bytes.
func paxBlock(typ byte, n int) []byte {
	val := strings.Repeat("c", n)
	rec := ""
	for l := len(" comment=\n") + len(val); ; l++ { // the length counts its own digits
		if r := fmt.Sprintf("%d comment=%s\n", l, val); len(r) == l {
			rec = r
			break
		}
	}
	body := make([]byte, (len(rec)+511)/512*512)
	copy(body, rec)
	return append(rawHeader(typ, "pax", len(rec)), body...)
}

// gzipOf compresses the raw tar blocks, a regular file "a/f" and the end of the archive.
func gzipOf(t *testing.T, blocks ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	for _, b := range blocks {
		zw.Write(b)
	}
	f := append(rawHeader(tar.TypeReg, "a/f", 1), make([]byte, 512)...)
	f[512] = 'x'
	zw.Write(f)
	zw.Write(make([]byte, 1024))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnpackBoundsMetaHeaders: meta headers (PAX, global) are no free entries: a stream
// of them (a gzip bomb of headers) stops at the bounds instead of being read to its end.
func TestUnpackBoundsMetaHeaders(t *testing.T) {
	lim := Limits{Bytes: 1 << 10, Entries: 10}
	var globals, locals [][]byte
	for range 20 {
		globals = append(globals, paxBlock(tar.TypeXGlobalHeader, 10))
	}
	for range 2000 {
		locals = append(locals, paxBlock(tar.TypeXHeader, 1000))
	}
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"global headers": {gzipOf(t, globals...), "more than 10 entries"},
		"pax headers":    {gzipOf(t, locals...), "decompressed"},
	} {
		t.Run(name, func(t *testing.T) {
			root, _ := openRoot(t)
			err := Place(root, "in", bytes.NewReader(tc.data), 0, lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
	// A few meta headers within the bounds are fine.
	root, dir := openRoot(t)
	if err := Place(root, "in", bytes.NewReader(gzipOf(t, globals[0], locals[0])), 0, lim); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "in", "f")); err != nil || string(b) != "x" {
		t.Fatalf("in/f: %q, %v", b, err)
	}
}

// TestUnpackNotThroughLinks: links that each stay inside the artifact on their own may
// not be chained to lead out of it (s -> ., s/t -> .. is t -> .. at the top): no entry
// is written, and no hard link made, through a link of the archive.
func TestUnpackNotThroughLinks(t *testing.T) {
	for name, entries := range map[string][]entry{
		"file through a link chain": {{name: "a/", typ: tar.TypeDir}, {name: "a/s", typ: tar.TypeSymlink, link: "."},
			{name: "a/s/t", typ: tar.TypeSymlink, link: ".."}, {name: "a/t/victim", typ: tar.TypeReg, body: "pwned"}},
		"dir through a link": {{name: "a/", typ: tar.TypeDir}, {name: "a/s", typ: tar.TypeSymlink, link: "."},
			{name: "a/s/t", typ: tar.TypeSymlink, link: ".."}, {name: "a/t/", typ: tar.TypeDir, mode: 0o777}},
		"hard link through a link chain": {{name: "a/", typ: tar.TypeDir}, {name: "a/s", typ: tar.TypeSymlink, link: "."},
			{name: "a/s/t", typ: tar.TypeSymlink, link: ".."}, {name: "a/h", typ: tar.TypeLink, link: "a/t/victim"}},
	} {
		t.Run(name, func(t *testing.T) {
			root, dir := openRoot(t)
			victim := filepath.Join(dir, "victim")
			if err := os.WriteFile(victim, []byte("orig"), 0o600); err != nil {
				t.Fatal(err)
			}
			err := Place(root, "in", bytes.NewReader(tgz(t, entries...)), 0, DefaultLimits)
			if err == nil || !strings.Contains(err.Error(), "link") {
				t.Errorf("got %v, want an error about a link", err)
			}
			if b, _ := os.ReadFile(victim); string(b) != "orig" {
				t.Errorf("victim beside the artifact: %q", b)
			}
			if fi, _ := os.Stat(dir); fi.Mode().Perm() == 0o777 {
				t.Errorf("the root's mode changed through a link: %v", fi.Mode())
			}
			if fi, _ := os.Stat(victim); fi != nil && fi.Sys().(*syscall.Stat_t).Nlink > 1 {
				t.Errorf("victim hard-linked into the artifact")
			}
		})
	}
}
