package instvol

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// trashDir holds, below the root, the directories a sweep took out of the tree until it
// removes them. escape never begins a component with '.', so no namespace is named so.
const trashDir = ".trash"

// Sweep removes the directories of the instances that are not in use: those that left
// the node for good (LeftForGood) at once, the others once a sweep has found them unused
// for grace. inUse lists the instances of the task groups bound to the node; it is called
// under the lock Mount takes, so an instance whose task group arrives meanwhile is either
// in it or created again after the removal. It returns the instances' directories removed
// (relative to the root).
//
// Under the lock a directory is only moved aside (a rename); what its containers wrote,
// a tree of any size, is removed after the lock is released, so that no start on the
// node waits for it.
func (d *Dirs) Sweep(inUse func() []Key, now time.Time, grace time.Duration) ([]string, error) {
	d.sweeping.Lock()
	defer d.sweeping.Unlock()
	root, err := os.OpenRoot(d.root)
	if errors.Is(err, fs.ErrNotExist) {
		d.mu.Lock()
		clear(d.idle)
		clear(d.final)
		d.mu.Unlock()
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("instance volumes: %w", err)
	}
	defer root.Close()
	removed, err := d.discard(root, inUse, now, grace)
	if rerr := d.removeTree(root, trashDir); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove instance volumes: %w", rerr))
	}
	return removed, err
}

// discard moves the directories of the instances not in use for long enough (Sweep) into
// trashDir, under the lock.
func (d *Dirs) discard(root *os.Root, inUse func() []Key, now time.Time, grace time.Duration) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	on, err := d.instances()
	if err != nil || len(on) == 0 {
		clear(d.idle)
		clear(d.final)
		return nil, err
	}
	used := map[string]bool{}
	for _, k := range inUse() {
		used[k.rel()] = true
	}
	for _, k := range d.holds {
		used[k.rel()] = true
	}
	var removed []string
	var errs []error
	present := map[string]bool{}
	for _, rel := range on {
		present[rel] = true
		if used[rel] {
			delete(d.idle, rel)
			delete(d.final, rel)
			continue
		}
		since, seen := d.idle[rel]
		if !seen {
			d.idle[rel] = now
			since = now
		}
		if !d.final[rel] && now.Sub(since) < grace {
			continue
		}
		if err := root.Mkdir(trashDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			errs = append(errs, fmt.Errorf("remove instance volumes %s: %w", rel, err))
			continue
		}
		aside := filepath.Join(trashDir, fmt.Sprintf("%d.%d", now.UnixNano(), len(removed)))
		if err := root.Rename(rel, aside); err != nil {
			errs = append(errs, fmt.Errorf("remove instance volumes %s: %w", rel, err))
			continue
		}
		removeEmptyParents(root, rel)
		delete(d.idle, rel)
		delete(d.final, rel)
		removed = append(removed, rel)
	}
	for rel := range d.idle {
		if !present[rel] {
			delete(d.idle, rel)
		}
	}
	for rel := range d.final {
		if !present[rel] {
			delete(d.final, rel)
		}
	}
	return removed, errors.Join(errs...)
}

// instances lists the instance directories under the root (<ns>/<kind>/<workload>/<index>),
// relative to it; anything else found there (a file, a symlink) is not looked into.
func (d *Dirs) instances() ([]string, error) {
	level := []string{""}
	for range instanceDepth {
		var next []string
		for _, rel := range level {
			entries, err := os.ReadDir(filepath.Join(d.root, rel))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("instance volumes: %w", err)
			}
			for _, e := range entries {
				if e.Type().IsDir() && !strings.HasPrefix(e.Name(), ".") { // ReadDir does not follow symlinks; trashDir is not an instance
					next = append(next, filepath.Join(rel, e.Name()))
				}
			}
		}
		level = next
	}
	return level, nil
}

// removeEmptyParents removes the workload, kind and namespace directories above a removed
// instance once they are empty (Remove refuses a directory that is not).
func removeEmptyParents(root *os.Root, rel string) {
	for dir := filepath.Dir(rel); dir != "." && dir != string(filepath.Separator); dir = filepath.Dir(dir) {
		if root.Remove(dir) != nil {
			return
		}
	}
}
