package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	v4 "github.com/berthhq/berth/api/v4"
)

// Event records use two key ranges (docs/store.md):
//
//	/berth/v1/eventlog/{lastnano:020d}/{ns}/{obj}/{id}  the record as JSON
//	/berth/v1/eventids/{ns}/{obj}/{id}                  eventIndex: where the record is
//
// {obj} hashes the object (kind, name) and {id} the rest of the event's identity (type,
// reason, message, task group, node), so the index key of an event is known before any
// read: a repeat finds its record with one compare-and-swap. The log is ordered by the
// time an event was last seen, across namespaces, so a paged list is a plain key range;
// a repeat moves its record to the end. The index groups an object's records under one
// prefix (its bound) and a namespace's under another (its bound and its listing).
const (
	eventLogPrefix   = prefix + "eventlog/"
	eventIndexPrefix = prefix + "eventids/"
)

// eventIdentity is what makes two events "the same": they merge into one record.
type eventIdentity struct {
	ns  string // namespace segment: clusterEventNS for none
	obj string // hash of kind and name
	id  string // hash of type, reason, message, task group and node
}

func identityOf(e v4.Event) eventIdentity {
	ns := e.Namespace
	if ns == "" {
		ns = clusterEventNS
	}
	return eventIdentity{ns: ns, obj: objectHash(e.Kind, e.Name),
		id: digest(32, e.Type, e.Reason, e.Message, e.TaskGroup, e.Node)}
}

// objectHash names an object in event keys. Hashing keeps any name (event names are not
// validated like object names) from breaking the key layout.
func objectHash(kind v4.Kind, name string) string { return digest(16, string(kind), name) }

// digest is the first n hex digits of the SHA-256 of parts, NUL-separated so that
// ("ab", "c") and ("a", "bc") differ. It hashes one buffer on the stack (a record's
// parts fit unless its names are long): two digests are computed per event recorded.
func digest(n int, parts ...string) string {
	buf := make([]byte, 0, 2048)
	for _, p := range parts {
		buf = append(buf, p...)
		buf = append(buf, 0)
	}
	sum := sha256.Sum256(buf)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:n])
}

func (i eventIdentity) indexKey() string {
	return eventIndexPrefix + i.ns + "/" + i.obj + "/" + i.id
}

// logKey is the record's key when last seen at unixNano, zero-padded so that key order is
// time order.
func (i eventIdentity) logKey(unixNano int64) string {
	return fmt.Sprintf("%s%020d/%s/%s/%s", eventLogPrefix, unixNano, i.ns, i.obj, i.id)
}

// eventIndexRange is the index prefix of one namespace ("" for cluster events), or of one
// object in it when kind and name are both given.
func eventIndexRange(ns string, kind v4.Kind, name string) string {
	if ns == "" {
		ns = clusterEventNS
	}
	if kind != "" && name != "" {
		return eventIndexPrefix + ns + "/" + objectHash(kind, name) + "/"
	}
	return eventIndexPrefix + ns + "/"
}

// indexKeyOfLog maps a log key back to its index key.
func indexKeyOfLog(logKey string) (string, error) {
	rest, ok := strings.CutPrefix(logKey, eventLogPrefix)
	if !ok {
		return "", fmt.Errorf("event key %q is outside %s", logKey, eventLogPrefix)
	}
	_, tail, ok := strings.Cut(rest, "/")
	if !ok || strings.Count(tail, "/") != 2 {
		return "", fmt.Errorf("event key %q: want %s{time}/{ns}/{obj}/{id}", logKey, eventLogPrefix)
	}
	return eventIndexPrefix + tail, nil
}
