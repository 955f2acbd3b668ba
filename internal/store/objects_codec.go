package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// encodeObject gives the stored form: JSON without resourceVersion (etcd's mod revision is
// the only truth for it) and with the given creation time. obj is left as it was.
func encodeObject(obj v4.Object, created time.Time) ([]byte, error) {
	meta := obj.GetMeta()
	rv, ct := meta.ResourceVersion, meta.CreationTimestamp
	meta.ResourceVersion, meta.CreationTimestamp = "", created
	defer func() { meta.ResourceVersion, meta.CreationTimestamp = rv, ct }()
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return b, nil
}

// putObject writes an object's stored form, sealed for a sealed kind (sealing.go).
func (s *Store) putObject(kind v4.Kind, ns, name string, val []byte) clientv3.Op {
	key := objectKey(kind, ns, name)
	return clientv3.OpPut(key, string(s.sealFor(kind, key, val)))
}

// putRaw writes an object's submitted document, sealed for a sealed kind.
func (s *Store) putRaw(kind v4.Kind, ns, name string, raw Raw) clientv3.Op {
	key := rawKey(kind, ns, name)
	return clientv3.OpPut(key, string(s.sealFor(kind, key, []byte(encodeRaw(raw)))))
}

// decodeObject decodes a stored object (opening a sealed one) and sets its resourceVersion
// from the key's mod revision.
func (s *Store) decodeObject(kind v4.Kind, kv *mvccpb.KeyValue) (v4.Object, error) {
	return s.decodeObjectAt(kind, kv, kv.ModRevision)
}

// decodeObjectAt is decodeObject with resourceVersion rev (a deleted object's is the
// revision of its deletion).
func (s *Store) decodeObjectAt(kind v4.Kind, kv *mvccpb.KeyValue, rev int64) (v4.Object, error) {
	obj, err := v4.New(kind)
	if err != nil {
		return nil, err
	}
	val, err := s.openValue(kv.Key, kv.Value)
	if err != nil {
		return nil, fmt.Errorf("decode stored %s: %w", kind, err)
	}
	if err := json.Unmarshal(val, obj); err != nil {
		return nil, fmt.Errorf("decode stored %s at %s: %w", kind, kv.Key, err)
	}
	obj.GetMeta().ResourceVersion = formatRev(rev)
	return obj, nil
}

// encodeRaw stores the content type on the first line, then the bytes untouched.
func encodeRaw(r Raw) string {
	ct := r.ContentType
	if ct == "" {
		ct = ContentTypeJSON
	}
	return ct + "\n" + string(r.Data)
}

func decodeRaw(b []byte) Raw {
	ct, data, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return Raw{ContentType: ContentTypeJSON, Data: b}
	}
	return Raw{ContentType: string(ct), Data: data}
}

func checkObject(obj v4.Object) error {
	meta := obj.GetMeta()
	if err := checkKey(obj.GetKind(), meta.Namespace, meta.Name); err != nil {
		return err
	}
	// checkKey allows empty values for List and Watch; an object needs both (its name only
	// when the kind is cluster-scoped).
	nameErr := checkName("name", meta.Name)
	var nsErr error
	if obj.GetKind().Namespaced() {
		nsErr = checkName("namespace", meta.Namespace)
	}
	if err := errors.Join(nameErr, nsErr); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// appendErr appends err to errs when it is one: every write checks its key, and a slice
// of nils would be made each time.
func appendErr(errs []error, err error) []error {
	if err == nil {
		return errs
	}
	return append(errs, err)
}

// checkKey rejects a kind, namespace or name that would address keys outside the object's
// own (names come from URL paths too, where "%2F" decodes to "/"). An empty name or
// namespace is allowed only where it means "all" (List, Watch). Cluster-scoped kinds
// (nodes) have no namespace: ns must be "".
func checkKey(kind v4.Kind, ns, name string) error {
	if !kind.Valid() {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalid, kind)
	}
	var errs []error
	switch {
	case !kind.Namespaced():
		if ns != "" {
			errs = append(errs, fmt.Errorf("%s objects are not namespaced, got namespace %q", kind, ns))
		}
	case ns != "" || name != "":
		errs = appendErr(errs, checkName("namespace", ns))
	}
	if name != "" {
		errs = appendErr(errs, checkName("name", name))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

func formatRev(rev int64) string { return strconv.FormatInt(rev, 10) }

// parseRev reads a resourceVersion; "" means none (0).
func parseRev(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: resourceVersion %q is not a positive integer", ErrInvalid, s)
	}
	return n, nil
}
