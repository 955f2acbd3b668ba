package stepio

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// Store is the server's artifact routes for one task group (docs/workflows.md, "Inputs
// and outputs"): the server, not the agent, decides the keys, from the task group's spec.
type Store interface {
	// Get streams input's stored bytes; an error wrapping fs.ErrNotExist when missing.
	Get(ctx context.Context, input string) (io.ReadCloser, error)
	// Put stores body (size bytes, read again from the start on a retry) as artifact.
	Put(ctx context.Context, artifact string, body io.ReadSeeker, size int64) (v4.StoredArtifact, error)
}

// Stager stages a step's inputs.
type Stager struct {
	Policy *Policy
	Store  Store
	// TmpDir is a directory of the agent's own for clones (the pod's).
	TmpDir string
	// Limits bound one input once unpacked (default DefaultLimits).
	Limits Limits
	// Timeout bounds one input from the repository (default RepositoryInputTimeout).
	Timeout time.Duration
}

// RepositoryInputTimeout bounds the staging of one input from the artifact repository
// (up to a gigabyte, as a collection): a server or store that stops sending mid-stream
// must not hold the step's start for ever.
const RepositoryInputTimeout = 30 * time.Minute

// Stage writes in at name in root (a file, or a directory for an unpacked archive or
// a clone). A missing optional input from the repository is skipped.
func (s *Stager) Stage(ctx context.Context, in v4.StepInput, root *os.Root, name string) error {
	lim := s.Limits
	if lim.Bytes <= 0 {
		lim = DefaultLimits
	}
	mode := fs.FileMode(in.Mode) & 0o777
	switch {
	case in.Raw != nil:
		return WriteFile(root, name, strings.NewReader(*in.Raw), mode, int64(len(*in.Raw)))
	case in.HTTP != nil:
		return s.stageHTTP(ctx, in.HTTP, root, name, mode, lim.Bytes)
	case in.Git != nil:
		return s.stageGit(ctx, in, root, name, lim)
	case in.Key != "":
		timeout := s.Timeout
		if timeout <= 0 {
			timeout = RepositoryInputTimeout
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		rc, err := s.Store.Get(ctx, in.Name)
		if isNotExist(err) && in.Optional {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get from the artifact repository: %w", err)
		}
		defer rc.Close()
		return Place(root, name, rc, mode, lim)
	}
	if in.Optional {
		return nil
	}
	return errors.New("no source: key, raw, http or git")
}

func (s *Stager) stageHTTP(ctx context.Context, h *v4.WfHTTPArtifact, root *os.Root, name string, mode fs.FileMode, limit int64) error {
	pr, pw := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		err := s.Policy.FetchHTTP(ctx, h, pw, limit)
		pw.CloseWithError(err)
		errc <- err
	}()
	werr := WriteFile(root, name, pr, mode, limit)
	pr.CloseWithError(errors.New("stage ended")) // a fetch still writing stops
	if ferr := <-errc; ferr != nil {
		return ferr
	}
	return werr
}

func (s *Stager) stageGit(ctx context.Context, in v4.StepInput, root *os.Root, name string, lim Limits) error {
	if err := os.MkdirAll(s.TmpDir, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.TmpDir, "git-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "clone")
	if err := s.Policy.CloneGit(ctx, in.Git, dir, lim); err != nil {
		return err
	}
	src, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer src.Close()
	return CopyTree(ctx, RootSource{Root: src}, ".", root, name, lim)
}

// CopyTree copies p of src to name in root, as Unpack would the archive of it.
func CopyTree(ctx context.Context, src Source, p string, root *os.Root, name string, lim Limits) error {
	u, err := newUnpacker(root, name, lim)
	if err != nil {
		return err
	}
	entries := 0
	return src.Walk(ctx, p, func(h *tar.Header, r io.Reader) error {
		if entries++; entries > lim.Entries {
			return fmt.Errorf("more than %d entries", lim.Entries)
		}
		if err := u.entry(r, h); err != nil {
			return fmt.Errorf("%s: %w", truncate(h.Name), err)
		}
		return nil
	})
}

// isNotExist reports a missing file or artifact.
func isNotExist(err error) bool { return err != nil && errors.Is(err, fs.ErrNotExist) }
