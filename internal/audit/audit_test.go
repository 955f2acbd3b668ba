package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRecordAndRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	l, err := Open(path, 2000, 2)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if err := l.Record(Entry{Time: time.Now(), Who: "anonymous", Verb: "read", Method: "GET", Path: "/v1/x/" + strings.Repeat("p", i), Status: 200}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	l.Close()
	files, _ := filepath.Glob(path + "*")
	if len(files) != 3 { // audit.log, .1, .2: the older ones were dropped
		t.Fatalf("files %v, want the log and 2 old ones", files)
	}
	for _, f := range files {
		fi, _ := os.Stat(f)
		if fi.Size() > 2000 || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v", f, fi.Size(), fi.Mode())
		}
		fh, _ := os.Open(f)
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var e Entry
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Who != "anonymous" {
				t.Errorf("%s: line %q: %v", f, sc.Text(), err)
			}
		}
		fh.Close()
	}
	if err := l.Record(Entry{}); err == nil {
		t.Error("a closed log recorded")
	}

	// A client's long path is clipped; the line stays valid JSON.
	l2, err := Open(filepath.Join(dir, "long.log"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := l2.Record(Entry{Who: "anonymous", Path: strings.Repeat("x", 100000), Name: strings.Repeat("n", 100000)}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "long.log"))
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil || len(b) > 3*maxField || len(e.Path) > maxField+4 {
		t.Fatalf("long entry: %d bytes, %v", len(b), err)
	}
}
