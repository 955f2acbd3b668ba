package httpapi

import (
	"context"
	"strings"
	"testing"
)

// batchSource is a Source whose values come in batches: each batch waits until the
// stream has taken the one before and waited on Ready. It ends after the last batch
// unless endless.
type batchSource struct {
	batches [][]string
	endless bool
	ready   chan struct{}
}

func (s *batchSource) Ready() <-chan struct{} { return s.ready }

func (s *batchSource) Next() (v string, ok, open bool) {
	if len(s.batches) > 0 && len(s.batches[0]) > 0 {
		v, s.batches[0] = s.batches[0][0], s.batches[0][1:]
		return v, true, s.endless || len(s.batches[0]) > 0 || len(s.batches) > 1
	}
	if len(s.batches) > 1 { // the next batch comes once the stream waits
		s.batches = s.batches[1:]
		s.ready <- struct{}{}
		return "", false, true
	}
	return "", false, s.endless
}

// StreamFrom writes every value of its source and flushes once per batch (when it has
// caught up), and returns when the source or ctx ends.
func TestStreamFrom(t *testing.T) {
	for _, tc := range []struct {
		name        string
		batches     [][]string
		endless     bool
		want        string
		wantFlushes int // the headers' flush included
	}{
		{"one batch", [][]string{{"a", "b", "c"}}, false, "abc", 2},
		{"a batch at a time", [][]string{{"a", "b"}, {}, {"c"}}, false, "abc", 3},
		{"nothing", nil, false, "", 1},
		{"ctx ends while it waits", [][]string{{"a"}}, true, "a", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.endless {
				cancel() // seen only once the stream waits: it has taken all that was ready
			}
			src := &batchSource{batches: tc.batches, endless: tc.endless, ready: make(chan struct{}, 1)}
			rec := newRecorder()
			StreamFrom(ctx, rec, src, func(v string) any { return v })
			var got strings.Builder
			for _, w := range rec.writes {
				got.WriteString(strings.Trim(strings.TrimSpace(string(w)), `"`))
			}
			if got.String() != tc.want || rec.flushes != tc.wantFlushes {
				t.Fatalf("wrote %q in %d flushes, want %q in %d", got.String(), rec.flushes, tc.want, tc.wantFlushes)
			}
		})
	}
}
