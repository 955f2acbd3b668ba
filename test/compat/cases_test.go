package compat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// step is one request of a conformance case file and what its answer must hold.
type step struct {
	Name    string            `json:"name"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	// Body is sent as it is written in the file (a JSON value), or, when it is a JSON
	// string, as that string.
	Body json.RawMessage `json:"body"`
	// Status is the HTTP status; Answer is a subset of the JSON answer (objects: these
	// keys with these values, arrays: these elements first, in order); Contains is text
	// the answer must hold, Lacks text it must not.
	Status   int             `json:"status"`
	Answer   json.RawMessage `json:"answer"`
	Contains []string        `json:"contains"`
	Lacks    []string        `json:"lacks"`
	// Length, when set, is the length of the array at path LengthOf of the answer
	// ("data" for BCS's list answers, "" for the answer itself).
	Length   *int   `json:"length"`
	LengthOf string `json:"lengthOf"`
	// Within, in seconds, repeats the request until the answer matches (a state the
	// controllers reach).
	Within int `json:"within"`
	// Decode names the BCS type (wire_test.go) the answer's data decodes into strictly,
	// as bcs-client decodes it; every BCS answer's envelope is decoded strictly.
	Decode string `json:"decode"`
}

// runCases runs the steps of a case file in order against b. Every step sends the
// headers (a step's own header with an empty value removes one), and ${NAME} in a step's
// path and body is replaced by vars[NAME].
func runCases(t *testing.T, b *berth, file string, headers, vars map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range vars {
		raw = bytes.ReplaceAll(raw, []byte("${"+k+"}"), []byte(v))
	}
	var steps []step
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&steps); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	for i, s := range steps {
		deadline := time.Now().Add(time.Duration(s.Within) * time.Second)
		for {
			problem := s.check(t, b, headers)
			if problem == "" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s step %d (%s): %s %s: %s", file, i, s.Name, s.Method, s.Path, problem)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// check sends the step's request and says what is wrong with the answer ("" nothing).
func (s step) check(t *testing.T, b *berth, headers map[string]string) string {
	header := http.Header{}
	for k, v := range headers {
		header.Set(k, v)
	}
	for k, v := range s.Headers {
		if v == "" {
			header.Del(k)
		} else {
			header.Set(k, v)
		}
	}
	body := string(s.Body)
	var str string
	if json.Unmarshal(s.Body, &str) == nil {
		body = str
	}
	if body != "" {
		header.Set("Content-Type", "application/json")
	}
	status, _, got := b.do(t, s.Method, s.Path, header, body)
	if status != s.Status {
		return fmt.Sprintf("HTTP %d, want %d: %s", status, s.Status, got)
	}
	for _, c := range s.Contains {
		if !strings.Contains(string(got), c) {
			return fmt.Sprintf("answer lacks %q: %s", c, got)
		}
	}
	for _, c := range s.Lacks {
		if strings.Contains(string(got), c) {
			return fmt.Sprintf("answer holds %q: %s", c, got)
		}
	}
	if kubePath(s.Path) {
		if err := checkKube(got, s.Decode); err != nil {
			return fmt.Sprintf("Kubernetes' types: %v: %s", err, got)
		}
	} else if bcsPath(s.Path) {
		if err := checkWire(got, s.Decode); err != nil {
			return fmt.Sprintf("BCS's types: %v: %s", err, got)
		}
	} else if s.Decode != "" {
		t.Fatalf("step %s: decode %q of a route that is not BCS's", s.Name, s.Decode)
	}
	var answer any
	if len(s.Answer) > 0 || s.Length != nil {
		if err := json.Unmarshal(got, &answer); err != nil {
			return fmt.Sprintf("answer is not JSON (%v): %s", err, got)
		}
	}
	if len(s.Answer) > 0 {
		var want any
		if err := json.Unmarshal(s.Answer, &want); err != nil {
			t.Fatalf("step %s: answer: %v", s.Name, err)
		}
		if where := subset(want, answer, "answer"); where != "" {
			return where + ": " + string(got)
		}
	}
	if s.Length != nil {
		v := answer
		if s.LengthOf != "" {
			m, _ := answer.(map[string]any)
			v = m[s.LengthOf]
		}
		if a, ok := v.([]any); !ok || len(a) != *s.Length {
			return fmt.Sprintf("%s holds %v, want %d items: %s", s.LengthOf, v, *s.Length, got)
		}
	}
	return ""
}

// subset says where got differs from want, want being a subset of it.
func subset(want, got any, at string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s is %v, want an object", at, got)
		}
		for k, v := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s.%s is missing", at, k)
			}
			if where := subset(v, gv, at+"."+k); where != "" {
				return where
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) < len(w) {
			return fmt.Sprintf("%s is %v, want at least %d items", at, got, len(w))
		}
		for i := range w {
			if where := subset(w[i], g[i], fmt.Sprintf("%s[%d]", at, i)); where != "" {
				return where
			}
		}
		return ""
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Sprintf("%s is %v, want %v", at, got, want)
	}
	return ""
}
