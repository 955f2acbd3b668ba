package server

import (
	"encoding/json"
	"testing"
)

// The examples of RFC 7386, appendix A.
func TestMergePatchRFC7386(t *testing.T) {
	tests := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tt := range tests {
		var target, patch any
		if err := json.Unmarshal([]byte(tt.target), &target); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(tt.patch), &patch); err != nil {
			t.Fatal(err)
		}
		before, _ := json.Marshal(target)
		got, err := json.Marshal(mergePatch(target, patch))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("merge %s with %s = %s, want %s", tt.target, tt.patch, got, tt.want)
		}
		if after, _ := json.Marshal(target); string(after) != string(before) {
			t.Errorf("target modified: %s -> %s", before, after)
		}
	}
}
