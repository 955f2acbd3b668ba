package instvol

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Sweep removes the directories of the instances that are not in use: those that left
// the node for good (LeftForGood) at once, the others once a sweep has found them unused
// for grace. inUse lists the instances of the task groups bound to the node; it is called
// under the lock Mount takes, so an instance whose task group arrives meanwhile is either
// in it or created again after the removal. It returns the instances' directories removed
// (relative to the root).
func (d *Dirs) Sweep(inUse func() []Key, now time.Time, grace time.Duration) ([]string, error) {
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
	root, err := os.OpenRoot(d.root)
	if err != nil {
		return nil, fmt.Errorf("instance volumes: %w", err)
	}
	defer root.Close()
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
		if err := root.RemoveAll(rel); err != nil {
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
				if e.Type().IsDir() { // ReadDir does not follow symlinks
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
