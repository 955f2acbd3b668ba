package bytesize

import "testing"

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{300 << 20, "300.0 MiB"},
		{3 << 29, "1.5 GiB"},
		{8 << 30, "8.0 GiB"},
		{2 << 40, "2.0 TiB"},
		{3 << 50, "3.0 PiB"},
		{2048 << 50, "2048.0 PiB"}, // PiB is the largest unit
	} {
		if got := Format(tt.n); got != tt.want {
			t.Errorf("Format(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
