package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readEntries reads every line of the log at path.
func readEntries(t *testing.T, path string) []Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []Entry
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// Failed authentications are summed up: one line per source and minute with the count,
// the throttled ones and a few token IDs, written once the minute is over (or at Close);
// many tries from one source never make many lines.
func TestAuthFailuresAggregated(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 17, 40, 5, 0, time.UTC)
	cases := []struct {
		name  string
		tries []try
		flush time.Duration // Flush at t0 + flush; 0: only Close writes
		want  []string      // minute source count throttled tokens
	}{
		{"one source, one minute, one line",
			repeat(1000, func(i int) try {
				return try{"10.0.0.7", fmt.Sprintf("id%04d", i%3), i >= 990, time.Duration(i) * time.Millisecond}
			}),
			time.Minute, []string{"17:40 10.0.0.7 1000 10 [id0000 id0001 id0002]"}},
		{"sources apart, sorted",
			[]try{{"10.0.0.9", "", false, 0}, {"10.0.0.7", "abc123", false, time.Second}, {"10.0.0.9", "", false, 2 * time.Second}},
			time.Minute, []string{"17:40 10.0.0.7 1 0 [abc123]", "17:40 10.0.0.9 2 0 []"}},
		{"a new minute writes the last one",
			[]try{{"10.0.0.7", "", false, 0}, {"10.0.0.7", "", false, time.Minute}},
			0, []string{"17:40 10.0.0.7 1 0 []", "17:41 10.0.0.7 1 0 []"}},
		{"token IDs bounded",
			repeat(20, func(i int) try { return try{"10.0.0.7", fmt.Sprintf("t%02d", i), false, 0} }),
			time.Minute, []string{"17:40 10.0.0.7 20 0 [t00 t01 t02 t03 t04]"}},
		{"flush waits for the minute's end",
			[]try{{"10.0.0.7", "", false, 0}},
			30 * time.Second, []string{"17:40 10.0.0.7 1 0 []"}}, // written by Close, not by the early flush
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			l, err := Open(path, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, tr := range tc.tries {
				l.AuthFailure(tr.source, tr.token, tr.throttled, t0.Add(tr.at))
			}
			if tc.flush != 0 {
				if err := l.Flush(t0.Add(tc.flush)); err != nil {
					t.Fatal(err)
				}
				if tc.flush < time.Minute {
					if fi, _ := os.Stat(path); fi.Size() != 0 {
						t.Fatal("a minute not over yet was written")
					}
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l.AuthFailure("10.0.0.8", "", false, t0) // after Close: counted nowhere, no panic
			var got []string
			for _, e := range readEntries(t, path) {
				if e.Who != WhoUnauthenticated || e.Verb != VerbAuthenticate || e.Status != 401 || e.Method != "" {
					t.Errorf("line %+v", e)
				}
				got = append(got, fmt.Sprintf("%s %s %d %d %v", e.Time.Format("15:04"), e.Remote, e.Count, e.Throttled, e.Tokens))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// try is one failed authentication, at after t0.
type try struct {
	source, token string
	throttled     bool
	at            time.Duration
}

func repeat(n int, f func(int) try) []try {
	out := make([]try, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// Sources past the bound are summed up under OtherSources.
func TestAuthFailuresBoundedSources(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range maxSources + 50 {
		l.AuthFailure(fmt.Sprintf("10.%d.%d.1", i/256, i%256), "", false, now)
	}
	l.Close()
	entries := readEntries(t, path)
	if len(entries) != maxSources+1 {
		t.Fatalf("%d lines, want %d", len(entries), maxSources+1)
	}
	for _, e := range entries {
		if e.Remote == OtherSources && e.Count != 50 {
			t.Fatalf("other sources: %+v", e)
		}
	}
}

// An exec's command is kept argument by argument, bounded.
func TestCommandClipped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	long := make([]string, maxList+10)
	for i := range long {
		long[i] = "arg"
	}
	long[0] = strings.Repeat("x", 5000)
	for _, cmd := range [][]string{{"sh", "-c", "id; uname -a"}, long} {
		if err := l.Record(Entry{Who: "t", Verb: "exec", Command: cmd}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	entries := readEntries(t, path)
	if got := entries[0].Command; strings.Join(got, "|") != "sh|-c|id; uname -a" {
		t.Errorf("command %q", got)
	}
	if got := entries[1].Command; len(got) != maxList+1 || len(got[0]) > maxField+4 || got[maxList] != "… (10 more)" {
		t.Errorf("long command: %d args, first %d bytes, last %q", len(got), len(got[0]), got[len(got)-1])
	}
}
