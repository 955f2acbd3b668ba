package stepio

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ErrTooLarge is wrapped by the errors of outputs over their bounds.
var ErrTooLarge = errors.New("over its bound")

// ReadParameter reads the file p of src, at most limit bytes. ok is false when p does
// not exist; a directory, a link or a longer file is an error.
func ReadParameter(ctx context.Context, src Source, p string, limit int64) (value string, ok bool, err error) {
	var b strings.Builder
	seen := false
	err = src.Walk(ctx, p, func(h *tar.Header, r io.Reader) error {
		seen = true
		if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
			return fmt.Errorf("%s: not a regular file", p)
		}
		if h.Size > limit {
			return fmt.Errorf("%s: %d bytes, more than %d: %w", p, h.Size, limit, ErrTooLarge)
		}
		n, err := io.Copy(&b, io.LimitReader(r, limit+1))
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if n > limit {
			return fmt.Errorf("%s: more than %d bytes: %w", p, limit, ErrTooLarge)
		}
		return errStopWalk
	})
	if isNotExist(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if !seen {
		return "", false, nil
	}
	return b.String(), true, nil
}

// maxArchiveEntries bounds the entries of an output artifact.
const maxArchiveEntries = 100_000

// Archive writes p of src to w as a gzipped tar (its entries named from p's base name),
// at most limit bytes compressed and DefaultLimits uncompressed; it returns the bytes
// written and their digest ("sha256:<hex>"). Only files, directories and links are
// kept, without owners; a link is kept as a link, never followed.
func Archive(ctx context.Context, src Source, p string, w io.Writer, limit int64) (size int64, digest string, err error) {
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(w, h), limit: limit}
	zw := gzip.NewWriter(cw)
	tw := tar.NewWriter(zw)
	entries, raw := 0, int64(0)
	err = src.Walk(ctx, p, func(hd *tar.Header, r io.Reader) error {
		if _, err := stripFirst(hd.Name); err != nil {
			return fmt.Errorf("entry %q: %w", truncate(hd.Name), err)
		}
		switch hd.Typeflag {
		case tar.TypeReg, tar.TypeRegA, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
		default:
			return nil // devices, fifos: not an artifact's content
		}
		if entries++; entries > maxArchiveEntries {
			return fmt.Errorf("more than %d entries: %w", maxArchiveEntries, ErrTooLarge)
		}
		if raw += hd.Size; raw > DefaultLimits.Bytes {
			return fmt.Errorf("more than %d bytes uncompressed: %w", DefaultLimits.Bytes, ErrTooLarge)
		}
		out := &tar.Header{Typeflag: hd.Typeflag, Name: hd.Name, Linkname: hd.Linkname, Size: hd.Size,
			Mode: hd.Mode & 0o777, ModTime: hd.ModTime, Format: tar.FormatPAX}
		if out.Typeflag == tar.TypeRegA {
			out.Typeflag = tar.TypeReg
		}
		if out.Typeflag != tar.TypeReg {
			out.Size = 0
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if out.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, io.LimitReader(r, out.Size)); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && entries == 0 {
		err = fmt.Errorf("%s: nothing to archive", p)
	}
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if cw.over {
		return 0, "", fmt.Errorf("more than %d bytes compressed: %w", limit, ErrTooLarge)
	}
	if err != nil {
		return 0, "", err
	}
	return cw.n, "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// countWriter counts what passes and fails once more than limit bytes did.
type countWriter struct {
	w     io.Writer
	n     int64
	limit int64
	over  bool
}

func (c *countWriter) Write(b []byte) (int, error) {
	if c.n+int64(len(b)) > c.limit {
		c.over = true
		return 0, ErrTooLarge
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}
