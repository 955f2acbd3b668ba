package artifacts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
)

// Garbage collection, on every server, bounded per round:
//   - keys: a page of records (gcKeysPerRound) is read, cycling through them all; a key
//     "<ns>/<workflow>/<uid>/..." whose workflow is gone (neither archived nor stored
//     with that status.uid: one made again under the same name has another) is deleted, if it
//     is this server's blob or in an artifactrepository (the S3 object goes with it),
//     each delete within gcDeleteTimeout, and a repository that failed is not tried
//     again in the round (a namespace's hanging store holds up no other namespace);
//   - blobs: a few of this server's blob directories (gcShardsPerRound of 256) are
//     read and a blob no record counts is removed (a crash between a Put's rename and
//     its record, or a removal that failed).
const (
	gcKeysPerRound   = 500
	gcShardsPerRound = 8
	// DefaultGCInterval is the pause between rounds.
	DefaultGCInterval = 30 * time.Second
)

// GC is the collector's state between rounds.
type GC struct {
	r         *Router
	keyCursor string // "" at the start of the records
	shard     int
	// deleteTimeout bounds the delete of one key (gcDeleteTimeout; shorter in tests).
	deleteTimeout time.Duration
}

// gcDeleteTimeout bounds the delete of one key: an artifactrepository is a namespace's,
// and one whose store hangs must not hold up the collection of every namespace.
const gcDeleteTimeout = 30 * time.Second

// gcBusyPause is the pause after a round that left records unread (a deleted workflow of
// many steps is freed in minutes, not in one round per interval).
const gcBusyPause = time.Second

// NewGC makes the collector of r.
func NewGC(r *Router) *GC { return &GC{r: r, deleteTimeout: gcDeleteTimeout} }

// Run collects a round every interval (sooner while records are left unread) until ctx
// ends.
func (g *GC) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := g.Round(ctx); err != nil && ctx.Err() == nil {
			g.r.log.Warn("artifact garbage collection", "err", err)
		}
		pause := interval
		if g.keyCursor != "" {
			pause = min(interval, gcBusyPause)
		}
		t.Reset(pause)
	}
}

// Round runs one bounded round: a page of keys, then a few blob directories.
func (g *GC) Round(ctx context.Context) error {
	kerr := g.keysRound(ctx)
	var berr error
	if g.r.emb != nil {
		berr = g.blobsRound(ctx)
	}
	return errors.Join(kerr, berr)
}

// keysRound deletes the keys of gone workflows in one page of records.
func (g *GC) keysRound(ctx context.Context) error {
	recs, last, done, err := g.r.rec.page(ctx, g.keyCursor, gcKeysPerRound)
	if err != nil {
		return err
	}
	g.keyCursor = last
	if done {
		g.keyCursor = ""
	}
	uids := map[string]string{} // "ns/workflow" → status.uid; "\x00" when gone
	failed := map[string]bool{} // "ns/repository" whose delete failed: not tried again this round
	var errs []error
	for _, kr := range recs {
		if kr.Repository == "" && (g.r.emb == nil || kr.Holder != g.r.emb.holder) {
			continue // another server's blob: its collector deletes it with the file
		}
		parts := strings.SplitN(kr.Key, "/", 4)
		if len(parts) < 4 {
			continue // not a workflow's key
		}
		gone, err := g.workflowGone(ctx, uids, parts[0], parts[1], parts[2])
		if err != nil {
			return err
		}
		repo := parts[0] + "/" + kr.Repository
		if !gone || kr.Repository != "" && failed[repo] {
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, g.deleteTimeout)
		err = g.r.Delete(dctx, parts[0], kr.Key)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			failed[repo] = true
			errs = append(errs, fmt.Errorf("free %s: %w", kr.Key, err))
		}
	}
	return errors.Join(errs...)
}

// workflowGone reports whether no workflow ns/name with status.uid uid is stored or
// archived (one whose uid is not chosen yet is not gone).
func (g *GC) workflowGone(ctx context.Context, uids map[string]string, ns, name, uid string) (bool, error) {
	id := ns + "/" + name
	cur, ok := uids[id]
	if !ok {
		wf, err := store.Typed[*v4.Workflow](g.r.st, v4.KindWorkflow).Get(ctx, ns, name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			cur = "\x00"
		case err != nil:
			return false, fmt.Errorf("read workflow %s: %w", id, err)
		default:
			cur = wf.Status.UID
		}
		uids[id] = cur
	}
	if cur == "" || cur == uid {
		return false, nil // its uid is not chosen yet, or it is stored
	}
	// Not stored (or stored anew under the same name): it may be in the workflow archive,
	// read after the object was found missing, so an archive that took it meanwhile is
	// seen (the object's deletion and the archive's write are one transaction).
	archived, err := g.r.st.IsArchived(ctx, ns, name, uid)
	if err != nil {
		return false, fmt.Errorf("read the workflow archive for %s: %w", id, err)
	}
	return !archived, nil
}

// blobsRound removes the unreferenced blobs of a few blob directories.
func (g *GC) blobsRound(ctx context.Context) error {
	var errs []error
	for range gcShardsPerRound {
		dir := filepath.Join(g.r.emb.dir, "blobs", "sha256", fmt.Sprintf("%02x", g.shard))
		g.shard = (g.shard + 1) % 256
		ents, err := os.ReadDir(dir)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range ents {
			if _, err := g.r.emb.removeUnreferenced(ctx, "sha256:"+e.Name()); err != nil {
				errs = append(errs, fmt.Errorf("sweep blob %s: %w", e.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}
