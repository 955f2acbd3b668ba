package store

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
)

// The workflow archive (docs/workflows.md, "The workflow archive"). A finished workflow
// kept as an object costs every server memory for as long as it is kept: etcd's key
// index holds each of its keys, the leader's workflow cache a copy of it. Archived, it
// leaves the objects: it is packed with others of its namespace into chunks, each one
// etcd key holding up to wfArchiveChunkEntries workflows, compressed together:
//
//	/berth/v1/wfarchive/{namespace}/{name}/{uid}
//
// A chunk's key is the sort key ("name/uid") of the last workflow it holds, and it holds
// every archived workflow of its namespace whose sort key is above the previous chunk's
// key: the chunks are the leaves of a B-tree whose inner levels are etcd's own ordered
// keyspace. The chunk of a workflow is thus the first key at or after its sort key
// (or the last chunk, for a key past them all): one ranged read with a limit of one.
// Names and UIDs cannot contain "/", so the workflows of one name are adjacent.
//
// A chunk's value is a header line (JSON: how many entries, the earliest expiry), then
// the gzip of the entries' JSON, so the sweeper of expired entries reads headers
// without inflating chunks where nothing expired. Chunks count their bytes against the
// namespace's usage (not its objects: archiving a workflow frees an object).

// Bounds of a chunk: a chunk past wfArchiveChunkEntries entries or wfArchiveChunkBytes is
// split in two; one workflow alone past wfArchiveMaxValue is not archived (ErrTooLarge:
// under an external etcd's 1.5 MiB request limit). A batch writes at most
// wfArchiveBatch workflows per transaction (each a comparison and two deletes: under an
// external etcd's 128 operations).
const (
	wfArchiveChunkEntries = 200
	wfArchiveChunkBytes   = 256 << 10
	wfArchiveMaxValue     = 1 << 20
	wfArchiveBatch        = 30
)

// ErrTooLarge refuses to archive a workflow whose compressed record alone is past what
// one etcd value may hold.
var ErrTooLarge = errors.New("too large")

func wfArchivePrefix(ns string) string { return prefix + "wfarchive/" + ns + "/" }

// chunkHeader is the first line of a chunk's value.
type chunkHeader struct {
	Entries int       `json:"entries"`
	Expires time.Time `json:"expires,omitzero"` // the earliest ExpiresAt of its entries
}

// encodeChunk gives a chunk's value: its header line and the gzip of its entries' JSON.
func encodeChunk(entries []*v4.ArchivedWorkflow) ([]byte, error) {
	h := chunkHeader{Entries: len(entries)}
	for _, e := range entries {
		if !e.ExpiresAt.IsZero() && (h.Expires.IsZero() || e.ExpiresAt.Before(h.Expires)) {
			h.Expires = e.ExpiresAt
		}
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(h); err != nil { // ends with the newline
		return nil, fmt.Errorf("encode archive chunk header: %w", err)
	}
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if err := json.NewEncoder(zw).Encode(entries); err != nil {
		return nil, fmt.Errorf("encode archive chunk: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress archive chunk: %w", err)
	}
	return buf.Bytes(), nil
}

// wfArchiveMaxInflated bounds what a chunk inflates to: a chunk holds at most
// wfArchiveChunkEntries workflows, each under the request limit, so anything past this
// is not a chunk berth wrote.
const wfArchiveMaxInflated = 256 << 20

// decodeChunkHeader reads a chunk's header and returns the compressed rest.
func decodeChunkHeader(val []byte) (chunkHeader, []byte, error) {
	line, rest, ok := bytes.Cut(val, []byte("\n"))
	var h chunkHeader
	if !ok {
		return h, nil, errors.New("archive chunk has no header line")
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return h, nil, fmt.Errorf("archive chunk header: %w", err)
	}
	return h, rest, nil
}

// decodeChunk reads a chunk's entries, sorted by their sort keys.
func decodeChunk(key string, val []byte) ([]*v4.ArchivedWorkflow, error) {
	_, rest, err := decodeChunkHeader(val)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(rest))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	var entries []*v4.ArchivedWorkflow
	dec := json.NewDecoder(io.LimitReader(zr, wfArchiveMaxInflated))
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	for _, e := range entries {
		if e == nil || e.Workflow == nil {
			return nil, fmt.Errorf("read %s: an entry without its workflow", key)
		}
	}
	slices.SortFunc(entries, func(a, b *v4.ArchivedWorkflow) int { return strings.Compare(a.SortKey(), b.SortKey()) })
	return entries, nil
}

// encodedChunk is a chunk ready to be put: its key (its last entry's sort key) and value.
type encodedChunk struct {
	key string
	val []byte
}

// splitChunks encodes sorted entries as chunks within the bounds, halving a chunk past
// them. One entry past wfArchiveMaxValue alone is returned as tooLarge.
func splitChunks(ns string, entries []*v4.ArchivedWorkflow) (chunks []encodedChunk, tooLarge []*v4.ArchivedWorkflow, err error) {
	if len(entries) == 0 {
		return nil, nil, nil
	}
	if len(entries) <= wfArchiveChunkEntries {
		val, err := encodeChunk(entries)
		if err != nil {
			return nil, nil, err
		}
		if len(val) <= wfArchiveChunkBytes || len(entries) == 1 && len(val) <= wfArchiveMaxValue {
			return []encodedChunk{{key: wfArchivePrefix(ns) + entries[len(entries)-1].SortKey(), val: val}}, nil, nil
		}
		if len(entries) == 1 {
			return nil, entries, nil
		}
	}
	half := len(entries) / 2
	a, ta, err := splitChunks(ns, entries[:half])
	if err != nil {
		return nil, nil, err
	}
	b, tb, err := splitChunks(ns, entries[half:])
	if err != nil {
		return nil, nil, err
	}
	return append(a, b...), append(ta, tb...), nil
}

// checkArchiveKey rejects a namespace, name or UID that would break the key layout; an
// empty uid stands for any of the name (it makes no key).
func checkArchiveKey(ns, name, uid string) error {
	err := errors.Join(checkName("namespace", ns), checkName("workflow", name))
	if uid != "" {
		err = errors.Join(err, checkName("uid", uid))
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return nil
}
