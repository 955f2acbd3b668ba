package server

import (
	"net"
	"net/url"
	"os"
	"testing"
)

// No admission webhook is the API itself, by address or by name, whatever the API
// listens on.
func TestOwnAPI(t *testing.T) {
	host, _ := os.Hostname()
	loopback := newOwnAPI(Config{Listen: "127.0.0.1:7470", TLSSANs: []string{"api.example"}})
	everywhere := newOwnAPI(Config{Listen: ":7470"})
	everywhere.listening(&net.TCPAddr{IP: net.IPv6unspecified, Port: 7471}) // the port it got
	cases := []struct {
		name string
		own  *ownAPI
		url  string
		want bool
	}{
		{"the listen address", loopback, "https://127.0.0.1:7470/x", true},
		{"localhost", loopback, "https://localhost:7470", true},
		{"a SAN", loopback, "https://api.example:7470", true},
		{"the host name", loopback, "https://" + host + ":7470", true},
		{"IPv6 loopback", loopback, "https://[::1]:7470", true},
		{"another port", loopback, "https://127.0.0.1:8443", false},
		{"another loopback address", loopback, "https://127.0.0.2:7470", false},
		{"another host", loopback, "https://hooks.example:7470", false},
		{"the default port", newOwnAPI(Config{Listen: "127.0.0.1:443"}), "https://localhost/hook", true},
		{"every address: another loopback", everywhere, "https://127.0.0.2:7470", true},
		{"every address: the port it got", everywhere, "https://127.0.0.1:7471", true},
		{"every address: another port", everywhere, "https://127.0.0.1:9000", false},
	}
	for _, c := range cases {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.own.isOwnURL(u); got != c.want {
			t.Errorf("%s: isOwnURL(%s) = %v, want %v", c.name, c.url, got, c.want)
		}
	}
}
