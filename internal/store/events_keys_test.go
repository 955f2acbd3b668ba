package store

import (
	"strings"
	"testing"
)

// The hashes in event keys do not change: records written before stay found by their
// repeats.
func TestEventDigestStable(t *testing.T) {
	tests := []struct {
		n     int
		parts []string
		want  string
	}{
		{16, []string{"Process", "web"}, "3e3835093ddfae45"},
		{32, []string{"Warning", "Failed", "boom", "0.web", "node-a"}, "72cde0e0a9b74007373862fb9a14a3ff"},
		{32, []string{strings.Repeat("x", 3000)}, "aa0ea9eb3de492d038e1c7fe8b5aeee4"}, // past the stack buffer
	}
	for _, tt := range tests {
		if got := digest(tt.n, tt.parts...); got != tt.want {
			t.Errorf("digest(%d, %.20q) = %s, want %s", tt.n, tt.parts, got, tt.want)
		}
	}
}
