package v4

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkParse parses BCS's sample process document in each mode, and with a key
// given twice, which the default mode reads token by token (docs/benchmarks.md).
func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/seed001_process_fixed.json")
	if err != nil {
		b.Fatal(err)
	}
	twice := bytes.Replace(data, []byte(`"kind"`), []byte(`"Kind": "process", "kind"`), 1)
	for _, bc := range []struct {
		name string
		data []byte
		mode Validation
	}{{"warn", data, ValidateWarn}, {"strict", data, ValidateStrict}, {"warn-duplicate", twice, ValidateWarn}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseValidated(bc.data, bc.mode); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
