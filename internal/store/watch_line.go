package store

import (
	"bytes"
	"encoding/json"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// sharedLine is the wire form of one change, encoded at most once and then shared,
// read-only, by every stream that sends the change (docs/store.md, "Shared cache"): the
// shared cache hands one change to every watcher of its object (every agent's catalog
// stream, a node's agent and the consoles watching its namespace), each of which encoded
// it again before. It belongs to one event, its type and its object: a stream that sends
// anything else (a DELETED for an object that left the watcher's node, a secret without
// its values) encodes its own line, so nothing of another object's line reaches it.
type sharedLine struct {
	typ  EventType
	obj  v4.Object // a pointer, as every object is: compared by identity
	once sync.Once
	line EncodedLine
	err  error
}

// EncodedLine is a watch stream's line already encoded: {"type":...,"object":...} and a
// newline, exactly as a json.Encoder writes v4.WatchLine. Its bytes are shared by every
// stream that sends it and never modified.
type EncodedLine struct{ b []byte }

// Bytes returns the line, newline included; the caller must not modify them.
func (l *EncodedLine) Bytes() []byte { return l.b }

// Share gives ev a line that every stream sending ev shares (SharedLine), encoded by the
// first of them. The shared cache calls it on each change it fans out; ev's object must
// not change from then on (the cache's objects never do).
func (ev *Event) Share() {
	if ev.Object != nil && ev.Type != Error && ev.Type != Progress {
		ev.shared = &sharedLine{typ: ev.Type, obj: ev.Object}
	}
}

// SharedLine returns ev's encoded line when ev carries a shared one (Share) and still has
// the type and object it was made for: the first caller encodes it, every caller gets the
// same line. ok is false otherwise, and when the object does not encode: the caller then
// encodes ev itself.
func (ev Event) SharedLine() (line *EncodedLine, ok bool) {
	l := ev.shared
	if l == nil || l.typ != ev.Type || l.obj != ev.Object {
		return nil, false
	}
	l.once.Do(func() { l.line.b, l.err = encodeLine(l.typ, l.obj) })
	return &l.line, l.err == nil
}

// lineEncoders encode lines into their buffers, from which each line is copied out at
// its size.
var lineEncoders = sync.Pool{New: func() any {
	e := new(lineEncoder)
	e.enc = json.NewEncoder(&e.buf)
	return e
}}

type lineEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

func encodeLine(typ EventType, obj v4.Object) ([]byte, error) {
	e := lineEncoders.Get().(*lineEncoder)
	defer lineEncoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v4.WatchLine[v4.Object]{Type: string(typ), Object: obj}); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf.Bytes()), nil
}
