// Package instvol keeps the directories of a node's instance volumes (docs/agent.md,
// "Instance volumes"): one per instance of a workload, container and mount path, under
// the agent's data dir, kept across the instance's restarts on the node and removed when
// the instance leaves the node for good.
//
// Every name in a directory's path comes from a spec (namespace, workload, mount path),
// so each is escaped into one path component that cannot be "." or "..", hold a '/' or
// be longer than a file name may be; different names never give the same component, so
// another namespace's or workload's instance never gets the same directory.
package instvol

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Key is one instance of a workload: what its directories belong to. Its task groups
// (one run after another, restarts and moves) share them.
type Key struct {
	Namespace string
	Kind      v4.Kind
	Owner     string
	Index     int
}

// KeyOf is the instance a task group runs: of its deployment when it has one (its
// revisions run the same instances one after the other), else of its owner.
func KeyOf(tg *v4.TaskGroup) Key {
	if d, ok := strings.CutPrefix(tg.Metadata.Annotations[v4.ControlledByAnnotation], "deployment/"); ok && d != "" {
		return Key{Namespace: tg.Metadata.Namespace, Kind: v4.KindDeployment, Owner: d, Index: tg.Spec.Index}
	}
	return Key{Namespace: tg.Metadata.Namespace, Kind: tg.Spec.Owner.Kind, Owner: tg.Spec.Owner.Name, Index: tg.Spec.Index}
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s#%d", k.Namespace, k.Kind, k.Owner, k.Index)
}

// rel is the instance's directory below the root: <ns>/<kind>/<workload>/<index>.
func (k Key) rel() string {
	return filepath.Join(escape(k.Namespace), escape(string(k.Kind)), escape(k.Owner), strconv.Itoa(k.Index))
}

// instanceDepth is how many components rel has.
const instanceDepth = 4

// volumeRel is one volume's directory below the root:
// <ns>/<kind>/<workload>/<index>/<container index>/<escaped mount path>.
func volumeRel(k Key, container int, mountPath string) (string, error) {
	switch {
	case k.Index < 0 || container < 0:
		return "", fmt.Errorf("instance %s: negative index", k)
	case k.Namespace == "" || k.Kind == "" || k.Owner == "":
		return "", fmt.Errorf("instance %s: no namespace, kind or workload", k)
	case !path.IsAbs(mountPath) || path.Clean(mountPath) == "/":
		return "", fmt.Errorf("mount path %q: must be an absolute path below /", mountPath)
	}
	mp := strings.TrimPrefix(path.Clean(mountPath), "/")
	return filepath.Join(k.rel(), strconv.Itoa(container), escape(mp)), nil
}

// maxComponent bounds an escaped component (file names may have 255 bytes): a longer one
// is cut and ends with '~' and a hash of the whole name.
const maxComponent = 128

// escape makes s one path component: letters, digits, '_', '-' and '.' stay (but a
// leading '.', so that no component is ".", ".." or hidden), every other byte becomes
// %XX. The code is prefix-free ('%' itself is escaped), so different names give different
// components; a cut one carries '~', which an escaped name never holds, and a hash.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' && i > 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	out := b.String()
	if out == "" {
		return "%"
	}
	if len(out) <= maxComponent {
		return out
	}
	sum := sha256.Sum256([]byte(s))
	return out[:maxComponent-33] + "~" + hex.EncodeToString(sum[:16])
}
