package v4

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bcsDocExpect is one entry of testdata/bcsdocs/expect.json: whether BCS took the
// document, and the fields berth warns about when it did.
type bcsDocExpect struct {
	BCS      string   `json:"bcs"` // "accepted" or "refused"
	Warnings []string `json:"warnings"`
	Why      string   `json:"why"`
	Refusal  string   `json:"refusal"` // a refused document's error says this: it is refused for Why
}

// BCS's own documentation examples and templates (testdata/bcsdocs; its README names each
// source) keep working: what BCS accepted berth accepts in the default mode, with exactly
// the expected warnings, and refuses with validate=strict when there is any; what BCS
// refused berth still refuses, in both modes.
func TestBCSDocs(t *testing.T) {
	raw, err := os.ReadFile("testdata/bcsdocs/expect.json")
	if err != nil {
		t.Fatal(err)
	}
	var expect map[string]bcsDocExpect
	if err := json.Unmarshal(raw, &expect); err != nil {
		t.Fatalf("expect.json: %v", err)
	}
	files, err := filepath.Glob("testdata/bcsdocs/*.json")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		if name == "expect.json" {
			continue
		}
		seen[name] = true
		e, ok := expect[name]
		if !ok {
			t.Errorf("%s has no entry in expect.json", name)
			continue
		}
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case e.BCS == "accepted":
				checkBCSDocAccepted(t, data, e)
			case e.BCS == "refused":
				if e.Refusal == "" {
					t.Fatalf("expect.json: a refused document needs the refusal its error says")
				}
				for _, mode := range []Validation{ValidateWarn, ValidateStrict} {
					_, err := ParseValidated(data, mode)
					if err == nil {
						t.Errorf("%s: accepted, want it refused (%s)", mode, e.Why)
					} else if !strings.Contains(err.Error(), e.Refusal) {
						t.Errorf("%s: refused with %v, want the refusal %q (%s)", mode, err, e.Refusal, e.Why)
					}
				}
			default:
				t.Fatalf("expect.json: bcs %q: want accepted or refused", e.BCS)
			}
		})
	}
	for name := range expect {
		if !seen[name] {
			t.Errorf("expect.json names %s, which is not in testdata/bcsdocs", name)
		}
	}
}

func checkBCSDocAccepted(t *testing.T, data []byte, e bcsDocExpect) {
	t.Helper()
	docs, err := ParseValidated(data, ValidateWarn)
	if err != nil {
		t.Fatalf("refused, but BCS accepted it: %v", err)
	}
	var got []string
	for _, d := range docs {
		for _, w := range d.Warnings {
			got = append(got, w.Field)
		}
	}
	slices.Sort(got)
	got = slices.Compact(got)
	want := slices.Sorted(slices.Values(e.Warnings))
	if !slices.Equal(got, want) {
		t.Errorf("warnings on %q, want on %q", got, want)
		for _, d := range docs {
			for _, w := range d.Warnings {
				t.Logf("warning: %s", w)
			}
		}
	}
	_, err = ParseValidated(data, ValidateStrict)
	if len(want) == 0 {
		if err != nil {
			t.Errorf("strict: refused a document without warnings: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("strict: accepted a document with warnings on %q", want)
	}
	// Strict names each field the default mode warns about, so the author can fix them all.
	var fe FieldErrors
	if !errors.As(err, &fe) {
		t.Fatalf("strict: want FieldErrors, got %T: %v", err, err)
	}
	for _, field := range want {
		if !slices.ContainsFunc(fe, func(f FieldError) bool { return f.Field == field }) {
			t.Errorf("strict: no error on %s: %v", field, err)
		}
	}
}
