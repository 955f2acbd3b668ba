package v4

import (
	"strings"
	"testing"
)

// The scan clears text without duplicates and never clears text with one: it leaves
// that, and whatever it cannot read, to the token pass.
func TestSurelyNoDuplicateKeys(t *testing.T) {
	deep := strings.Repeat(`{"a":`, maxScanDepth+2) + `1` + strings.Repeat(`}`, maxScanDepth+2)
	var many strings.Builder
	many.WriteString("{")
	for i := range maxScanKeys + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	many.WriteString("}")
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"empty", ``, true},
		{"flat", `{"a":1,"b":"x","c":null,"d":true,"e":-1.5e+3}`, true},
		{"same key at two depths", `{"a":{"a":1},"b":[{"a":1},{"a":2}]}`, true},
		{"a stream", "{\"a\":1}\n{\"a\":2} [1,2]", true},
		{"a key with an escaped quote", `{"a\"b":1,"a":2,"b":3}`, true},
		{"duplicate", `{"a":1,"b":2,"a":3}`, false},
		{"nested duplicate", `{"x":[{"m":{"k":1,"k":2}}]}`, false},
		{"escaped spelling", `{"kind":1,"k\u0069nd":2}`, false},
		{"invalid UTF-8 read as U+FFFD", "{\"\xff\":1,\"\xfe\":2}", false},
		{"not JSON", `{"a" 1}`, false},
		{"cut short", `{"a":[1,2`, false},
		{"control byte in a string", "{\"a\n\":1}", false},
		{"too deep", deep, false},
		{"too many keys", many.String(), false},
	}
	for _, tc := range tests {
		if got := surelyNoDuplicateKeys([]byte(tc.in)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The scan never clears text in which the token pass finds a duplicate.
func FuzzDuplicateKeyScan(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[{"c":1,"c":2}]}}`, `{"k\u0069nd":1,"kind":2}`,
		"{\"\xff\":1,\"\xfe\":2}", `[{"a":1},{"a":1}]`, `{"a":"\"","b":"\\"}`, `{} {"x":1,"x":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if duplicateKeysByTokens(data) != nil && surelyNoDuplicateKeys(data) {
			t.Fatalf("%q: the scan cleared a duplicate the token pass found", data)
		}
	})
}

// BenchmarkDuplicateKeys compares the scan with the token pass on an agent's report of
// 30 task group statuses.
func BenchmarkDuplicateKeys(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"statuses":[`)
	for i := range 30 {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"namespace":"bench","name":"` + strings.Repeat("x", 30) + `","status":{"phase":"Running","hostIP":"10.0.0.1",` +
			`"tasks":[{"name":"web","status":"Running","info":{"pid":1234,"startedAt":"2026-11-26T12:00:00Z"}}],"updated":"2026-11-26T12:00:01Z"}}`)
	}
	sb.WriteString(`]}`)
	data := []byte(sb.String())
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if !surelyNoDuplicateKeys(data) {
				b.Fatal("not cleared")
			}
		}
	})
	b.Run("tokens", func(b *testing.B) {
		for b.Loop() {
			if err := duplicateKeysByTokens(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
