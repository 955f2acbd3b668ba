package ui

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestSpecYAMLReadsBack: the YAML the spec panes show (static/js/yaml.js) is read back by
// a YAML parser as the very value it was written from, for values chosen to trip a naive
// emitter (words YAML reads as booleans, numbers or dates, indicators, blanks, comments,
// newlines and their chomping, control characters, keys that need quotes). It needs node,
// as TestConsoleWords does.
func TestSpecYAMLReadsBack(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("BERTH_REQUIRE_NODE") == "1" {
			t.Fatal("BERTH_REQUIRE_NODE=1 and node is not installed")
		}
		t.Skip("node is not installed")
	}
	strs := []string{"", " ", "web", " lead", "trail ", "true", "True", "yes", "no", "on", "off", "y", "n", "null", "~", "123", "-1", "1.5",
		".5", "1e3", "0x1F", "0o17", "1_000", "2026-11-29", "2026-11-29T04:30:00Z", "12:30", "10.0.0.1", ".inf", "-.inf", ".nan",
		"a: b", "a #b", "a#b", "key:", "#c", "- x", "-", "-x", "?", "? x", ":x", "[a]", "{a: b}", "*ref", "&a", "!tag", "|", ">", "'q'",
		`"q"`, "%x", "@x", "`x", "=", "<<", ",x", "---", "...", "--- x", "tab\there", "bell\a", "bom\ufeff", "\u2028", "é ü 字",
		"a\nb", "a\nb\n", "a\n\n", "a\n\n\n", "\n", "\n\n", "\na", "  a\nb", "a\n  b\n", "a\n   \nb", "a\r\nb", "line\t\nnext",
		"echo $HOME && exit 1 # done", "http://x.example/a?b=c#f", `C:\path\x`, "\\n"}
	doc := map[string]any{"apiVersion": "v4", "strings": strs, "nested": []any{map[string]any{"a": []any{}, "b": map[string]any{}},
		[]any{1, 2.5, true, nil}, []any{[]any{"x\ny"}}}}
	keys := map[string]any{}
	for i, s := range strs {
		keys[s] = i
	}
	doc["keys"] = keys
	in, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := filepath.Abs("static/js/yaml.js")
	if err != nil {
		t.Fatal(err)
	}
	script := `import { toYAML } from ` + strconvQuote("file://"+mod) + `;
let s = ''; process.stdin.on('data', (d) => { s += d; }); process.stdin.on('end', () => process.stdout.write(toYAML(JSON.parse(s))));`
	cmd := exec.Command(node, "--input-type=module", "-e", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var back any
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatalf("the YAML does not parse: %v\n%s", err, out)
	}
	back, ok := stringKeys(back)
	if !ok {
		t.Fatalf("a key read back as something else than a string:\n%s", out)
	}
	got, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	var want, have any
	json.Unmarshal(in, &want)
	json.Unmarshal(got, &have)
	wantJSON, _ := json.Marshal(want)
	haveJSON, _ := json.Marshal(have)
	if string(wantJSON) != string(haveJSON) {
		var w, h map[string]any
		json.Unmarshal(wantJSON, &w)
		json.Unmarshal(haveJSON, &h)
		ws, _ := w["strings"].([]any)
		hs, _ := h["strings"].([]any)
		for i := range ws {
			if i < len(hs) && ws[i] != hs[i] {
				t.Errorf("strings[%d]: %q read back as %#v", i, ws[i], hs[i])
			}
		}
		t.Fatalf("read back differs:\n%s\nwant %s\n got %s", out, wantJSON, haveJSON)
	}
}

// stringKeys is v with its maps' keys as strings (json cannot write yaml's map[any]any);
// false when a key is not a string (the emitter let it read as a date or a number).
func stringKeys(v any) (any, bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			var ok bool
			if v[k], ok = stringKeys(x); !ok {
				return nil, false
			}
		}
		return v, true
	case map[any]any:
		m := map[string]any{}
		for k, x := range v {
			s, ok := k.(string)
			if !ok {
				return nil, false
			}
			if m[s], ok = stringKeys(x); !ok {
				return nil, false
			}
		}
		return m, true
	case []any:
		for i, x := range v {
			var ok bool
			if v[i], ok = stringKeys(x); !ok {
				return nil, false
			}
		}
	}
	return v, true
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
