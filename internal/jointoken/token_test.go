package jointoken

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	pin := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		in      string
		id, pin string
		wantErr string
	}{
		{in: "berth-abc123.0123456789abcdef", id: "abc123"},
		{in: " berth-abc123.0123456789abcdef\n", id: "abc123"},
		{in: "berth-abc123.0123456789abcdef::" + pin, id: "abc123", pin: pin},
		{in: "", wantErr: "want berth-<id>.<secret>"},
		{in: "e2e-join-token", wantErr: "want berth-<id>.<secret>"},
		{in: "berth-ABC123.0123456789abcdef", wantErr: "6 lowercase"},
		{in: "berth-abc12.0123456789abcdef", wantErr: "6 lowercase"},
		{in: "berth-abc123", wantErr: "then a '.'"},
		{in: "berth-abc123.short", wantErr: "16 to 64"},
		{in: "berth-abc123.0123456789abcdef::sha256:xyz", wantErr: "CA hash"},
		{in: "berth-abc123.0123456789ABCDEF", wantErr: "16 to 64"},
	}
	for _, tt := range tests {
		tok, err := Parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q) = %v, want %q", tt.in, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789") {
				t.Errorf("Parse(%q): the error repeats the secret: %v", tt.in, err)
			}
			continue
		}
		if err != nil || tok.ID != tt.id || tok.CAHash != tt.pin {
			t.Errorf("Parse(%q) = %+v, %v", tt.in, tok, err)
		}
	}
}

func TestNewMatchesAndRoundTrips(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		tok, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if seen[tok.ID] {
			t.Fatalf("id %s twice in 50", tok.ID)
		}
		seen[tok.ID] = true
		pin := "sha256:" + strings.Repeat("0", 64)
		back, err := Parse(tok.WithPin(pin))
		if err != nil || back.ID != tok.ID || back.Secret != tok.Secret || back.CAHash != pin {
			t.Fatalf("round trip of %s: %+v %v", tok, back, err)
		}
		if !back.Matches(tok.SecretHash()) || back.Matches(HashSecret(tok.Secret+"x")) {
			t.Fatal("Matches is wrong")
		}
	}
}

// FuzzParse: a token from a flag, a file or a request header never panics the parser, and
// what it accepts prints back to itself.
func FuzzParse(f *testing.F) {
	f.Add("berth-abc123.0123456789abcdef")
	f.Add("berth-abc123.0123456789abcdef::sha256:" + strings.Repeat("0", 64))
	f.Add("berth-.::")
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(tok.WithPin("sha256:" + strings.Repeat("1", 64)))
		if err != nil || again.ID != tok.ID || again.Secret != tok.Secret {
			t.Fatalf("%q parsed to %+v, which does not round-trip: %v", s, tok, err)
		}
	})
}
