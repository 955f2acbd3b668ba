package flexvolume

import "testing"

// A driver's output is read whatever it is: no panic, and a reply only with a status.
func FuzzParseReply(f *testing.F) {
	f.Add([]byte(`{"status":"Success","capabilities":{"attach":true}}`))
	f.Add([]byte("log line\n{\"status\":\"Failure\",\"message\":\"x\"}\n"))
	f.Add([]byte(`{"status":"Success","device":1}`))
	f.Add([]byte("{\n{\"status\":\"Not supported\"}"))
	f.Fuzz(func(t *testing.T, out []byte) {
		r, err := parseReply(out)
		if err == nil && r.Status == "" {
			t.Fatalf("a reply without a status from %q", out)
		}
	})
}
