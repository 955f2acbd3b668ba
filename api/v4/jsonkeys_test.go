package v4

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const cmHead = `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a"}`

// A strict parse refuses a key given twice in one JSON object wherever it is, naming its
// path and position, as duplicate YAML keys are (docs/spec.md "Streams").
func TestParseJSONDuplicateKeys(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // "" when the input is accepted
	}{
		{"kind twice", `{"apiVersion":"v4","kind":"configmap","kind":"secret","metadata":{"name":"a"},"datas":{}}`,
			`line 1, column 39: kind: duplicate key "kind"`},
		{"nested", `{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a","name":"b"},"datas":{}}`,
			`metadata.name: duplicate key "name"`},
		{"map key", cmHead + `,"datas":{"k":{"type":"file","content":"aGk="},"k":{"type":"file","content":"aGk="}}}`,
			`datas.k: duplicate key "k"`},
		{"odd map key", cmHead[:len(cmHead)-1] + `,"labels":{"a.b/c":"1","a.b/c":"2"}},"datas":{}}`,
			`metadata.labels["a.b/c"]: duplicate key "a.b/c"`},
		{"in a list", `{"apiVersion":"v4","kind":"process","metadata":{"name":"p"},"spec":{"instance":1,"template":{"spec":{"processes":[` +
			`{"procName":"a","startCmd":"./a"},{"procName":"a","startCmd":"./a","startCmd":"./b"}]}}}}`,
			`spec.template.spec.processes[1].startCmd: duplicate key "startCmd"`},
		{"second of a stream", cmHead + `,"datas":{}}` + "\n" + cmHead + `,"datas":{},"datas":{}}`,
			`line 2, column 74: documents[1].datas: duplicate key "datas"`},
		{"in an array of documents", `[` + cmHead + `,"datas":{}},` + "\n" + cmHead + `,"datas":{},"datas":{}}]`,
			`documents[1].datas: duplicate key "datas"`},
		{"blanks before the key", "{\"kind\":\"secret\",\n  \"kind\" : \"secret\"}", `line 2, column 3: kind: duplicate key "kind"`},
		{"escaped spelling", `{"apiVersion":"v4","kind":"configmap","k\u0069nd":"secret","metadata":{"name":"a"},"datas":{}}`,
			`kind: duplicate key "kind"`},
		{"same key in two objects", cmHead + `,"datas":{"k":{"type":"file","content":"aGk="},"j":{"type":"file","content":"aGk="}}}`, ""},
		{"same key in two documents", cmHead + `,"datas":{}}` + cmHead[:len(cmHead)-2] + `x"},"datas":{}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseValidated([]byte(tc.in), ValidateStrict)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			var fe FieldErrors
			_, at, _ := strings.Cut(tc.want, "line ")
			pos, path, _ := strings.Cut(at, ": ")
			if tc.want[0] != 'l' {
				pos, path = "", tc.want
			}
			path, _, _ = strings.Cut(path, ": duplicate key")
			if !errors.As(err, &fe) || !slices.ContainsFunc(fe, func(e FieldError) bool {
				return e.Field == path && strings.HasPrefix(e.Message, "duplicate key") && strings.Contains(e.Message, pos)
			}) {
				t.Fatalf("want the field error of %q, got %T %v", tc.want, err, err)
			}
		})
	}
}

// Keys that differ only in case stay a field error of the decoder in a strict parse.
func TestParseJSONCaseDuplicateIsAFieldError(t *testing.T) {
	_, err := ParseValidated([]byte(`{"apiVersion":"v4","kind":"configmap","metadata":{"name":"a","Name":"a"},"datas":{}}`), ValidateStrict)
	if fe := fieldErrors(t, err); !hasError(fe, "metadata.name", "duplicate") {
		t.Fatalf("got %v", err)
	}
}

func TestDecodeNodeDuplicateKeys(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"top", `{"kind":"node","metadata":{"name":"n1"},"metadata":{"name":"n2"}}`, `metadata: duplicate key "metadata"`},
		{"deep", `{"metadata":{"name":"n1"},"spec":{"ip":"10.0.0.1","attributes":{"text":{"rack":"r1","rack":"r2"}}}}`,
			`spec.attributes.text.rack: duplicate key "rack"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeNode([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

func TestCheckDuplicateKeys(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"none", `{"a":{"b":1},"c":[{"b":1},{"b":2}]}`, ""},
		{"deep in a list", `{"a":[{"b":1},{"b":1,"b":2}]}`, `a[1].b: duplicate key "b"`},
		{"top-level list", `[{"x":1,"x":1}]`, `[0].x: duplicate key "x"`},
		{"invalid JSON is the decoder's", `{"a":1,"a":`, `a: duplicate key "a"`},
		{"invalid before a duplicate", `{"a":}`, ""},
		{"empty", ``, ""},
		{"scalar", `3`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDuplicateKeys([]byte(tc.in))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want %q, got %v", tc.want, err)
			}
		})
	}
}

// The token pass names the path of a duplicate, but builds it only for the duplicate: a
// path string per level, each as long as the keys above it, cost a deep document of long
// keys memory quadratic in its depth (gigabytes for a 2 MiB body).
func TestDuplicateKeysDeepLongKeysBounded(t *testing.T) {
	const depth = 2000
	k := strings.Repeat("k", 200)
	nested := strings.Repeat(`{"`+k+`":`, depth) + "1" + strings.Repeat("}", depth)
	body := []byte(cmHead + `,"zz":` + nested + `,"zz":1}`)
	var err error
	allocated := bytesAllocated(func() { err = CheckDuplicateKeys(body) })
	if !errors.Is(err, errDuplicateKey) || !strings.Contains(err.Error(), `zz: duplicate key "zz"`) {
		t.Fatalf("err = %v, want the duplicate zz named", err)
	}
	if limit := uint64(64 << 20); allocated > limit {
		t.Errorf("CheckDuplicateKeys of a %d-byte body allocated %d MiB, want under %d MiB", len(body), allocated>>20, limit>>20)
	}
	// The duplicate is as deep as the keys go: its path names each level.
	deep := []byte(cmHead + `,"zz":` + strings.Repeat(`{"`+k+`":`, depth) + `{"a":1,"a":2}` + strings.Repeat("}", depth) + `}`)
	allocated = bytesAllocated(func() { err = CheckDuplicateKeys(deep) })
	if want := "zz" + strings.Repeat("."+k, depth) + `.a: duplicate key "a"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %.200v, want the path of every level", err)
	}
	if limit := uint64(64 << 20); allocated > limit {
		t.Errorf("CheckDuplicateKeys of a %d-byte body allocated %d MiB, want under %d MiB", len(deep), allocated>>20, limit>>20)
	}
}

// bytesAllocated is how many bytes f allocated.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
