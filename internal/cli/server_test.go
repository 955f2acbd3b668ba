package cli

import (
	"strings"
	"testing"
)

func TestDevBanner(t *testing.T) {
	var b strings.Builder
	devBanner(&b, "127.0.0.1:7470", "/home/u/.berth/dev", "host-1")
	out := b.String()
	for _, want := range []string{"http://127.0.0.1:7470", "node:     host-1", "/home/u/.berth/dev", "berth apply -f examples/", "berth get apps -A", "berth events -w"} {
		if !strings.Contains(out, want) {
			t.Errorf("banner lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "BERTH_SERVER") {
		t.Error("default address needs no BERTH_SERVER hint")
	}
	b.Reset()
	devBanner(&b, "127.0.0.1:9999", "/d", "")
	if !strings.Contains(b.String(), "export BERTH_SERVER=http://127.0.0.1:9999") {
		t.Errorf("banner for another port:\n%s", b.String())
	}
}

func TestServerFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"server"}, "--data-dir"},
		{[]string{"dev", "--log-level", "loud", "--data-dir", "DIR"}, "--log-level"},
	}
	for _, tt := range tests {
		args := tt.args
		for i, a := range args {
			if a == "DIR" {
				args[i] = t.TempDir()
			}
		}
		r := runCLI(t, "", "", args...)
		if r.err == nil || !strings.Contains(r.err.Error(), tt.want) {
			t.Errorf("%v: err = %v, want %q", tt.args, r.err, tt.want)
		}
	}
}
