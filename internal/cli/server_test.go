package cli

import (
	"context"
	"crypto/x509"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/internal/client"
)

func TestServerFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"server"}, "--data-dir"},
		{[]string{"dev", "--log-level", "loud", "--data-dir", "DIR"}, "--log-level"},
		{[]string{"server", "--etcd-endpoints", "http://127.0.0.1:1", "--join", "http://127.0.0.1:2"}, "for the embedded etcd"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-peer-listen", "127.0.0.1:21901", "--etcd-client-listen", "127.0.0.1:21902",
			"--join", "http://127.0.0.1:2"}, "--join needs the cluster's join token"},
		{[]string{"server", "--data-dir", "DIR", "--join", "https://127.0.0.1:2", "--join-token", "berth-abcdef.0123456789abcdef::sha256:" + strings.Repeat("0", 64)}, "needs --etcd-peer-listen and --etcd-client-listen"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-peer-listen", "127.0.0.1:21901", "--etcd-client-listen", "127.0.0.1:21902",
			"--join", "https://127.0.0.1:2", "--join-token", "t"}, "--join-token: join token: want berth-<id>.<secret>"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-peer-listen", "127.0.0.1:21901", "--etcd-client-listen", "127.0.0.1:21902",
			"--join", "https://127.0.0.1:2", "--join-token", "berth-abcdef.0123456789abcdef"}, "with the cluster's CA hash"},
		{[]string{"server", "--data-dir", "DIR", "--cert-lifetime", "10s"}, "--cert-lifetime 10s: at least 1m"},
		{[]string{"server", "--data-dir", "DIR", "--max-heartbeats-per-second", "-1"}, "--max-heartbeats-per-second -1: give a number of beats a second, or 0 for no bound"},
		{[]string{"dev", "--data-dir", "DIR", "--max-heartbeats-per-second", "NaN"}, "--max-heartbeats-per-second NaN"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-peer-listen", "127.0.0.1:21901", "--etcd-client-listen", "127.0.0.1:21902",
			"--join", "http://127.0.0.1:2", "--join-token", "berth-abcdef.0123456789abcdef::sha256:" + strings.Repeat("0", 64)}, "over https only"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-cacert", "/nope"}, "for an external etcd"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-peer-listen", "0.0.0.0:21901", "--etcd-client-listen", "127.0.0.1:21902"}, "not an unspecified one"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-peer-listen", "127.0.0.1:21901"}, "go together"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-quota-bytes", "lots"}, `--etcd-quota-bytes "lots": not a size`},
		{[]string{"dev", "--data-dir", "DIR", "--etcd-quota-bytes", "1MiB"}, `--etcd-quota-bytes "1MiB": must be between 16.0 MiB and 64.0 GiB`},
		{[]string{"server", "--data-dir", "DIR", "--etcd-quota-bytes", "-5"}, `--etcd-quota-bytes "-5": not a size`},
		{[]string{"server", "--etcd-endpoints", "http://127.0.0.1:1", "--etcd-quota-bytes", "1GiB"}, "--etcd-quota-bytes is for the embedded etcd"},
		{[]string{"server", "--data-dir", "DIR", "--etcd-compaction-interval", "1s"}, "--etcd-compaction-interval 1s: use 0 (never compact) or at least 10s"},
		{[]string{"dev", "--data-dir", "DIR", "--etcd-compaction-interval", "-1m"}, "--etcd-compaction-interval -1m0s"},
		{[]string{"dev", "--data-dir", "DIR", "--dns-addr", "53"}, `--dns-addr "53": give HOST:PORT, auto or off`},
		{[]string{"dev", "--data-dir", "DIR", "--service-proxy", "maybe"}, `--service-proxy "maybe": use auto, on or off`},
		{[]string{"dev", "--data-dir", "DIR", "--dns-addr", "off", "--service-proxy", "on"}, "--service-proxy on needs the cluster DNS server"},
		{[]string{"dev", "--data-dir", "DIR", "--dns-upstream", "8.8.8.8"}, `--dns-upstream "8.8.8.8": give HOST:PORT`},
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

// A join target that does not answer is retried until the budget runs out, then named;
// one that refuses the token is final at once.
func TestJoinClusterErrors(t *testing.T) {
	dead, err := client.New("http://127.0.0.1:1", client.WithBearerToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = joinCluster(context.Background(), dead, "s2", "http://127.0.0.1:21903", time.Second, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "no answer from the server to join at http://127.0.0.1:1") {
		t.Errorf("unreachable: %v", err)
	}
	api, url := newFakeAPI(t)
	// A server whose certificate cannot be verified is final too: it is not the cluster.
	untrusted, err := client.New(url, client.WithBearerToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = joinCluster(context.Background(), untrusted, "s2", "http://127.0.0.1:21903", time.Minute, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "cannot verify the berth server") || len(api.got()) != 0 {
		t.Errorf("untrusted: %v", err)
	}
	api.json("POST /v1/cluster/members", 401, `{"error":{"code":401,"reason":"Unauthorized","message":"a valid join token is required to join"}}`)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(fakeAPICert)
	c, err := client.New(url, client.WithHTTPClient(client.HTTPClient(pool, nil)), client.WithBearerToken("wrong"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = joinCluster(context.Background(), c, "s2", "http://127.0.0.1:21903", time.Minute, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "refused the join token") {
		t.Errorf("bad token: %v", err)
	}
	api.json("POST /v1/cluster/members", 409, `{"error":{"code":409,"reason":"Conflict","message":"a member named \"s2\" already exists"}}`)
	_, err = joinCluster(context.Background(), c, "s2", "http://127.0.0.1:21903", time.Minute, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), `refused the join: a member named "s2" already exists`) {
		t.Errorf("name clash: %v", err)
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"8589934592", 8 << 30, true},
		{"8GiB", 8 << 30, true},
		{"512 MiB", 512 << 20, true},
		{"64kib", 64 << 10, true},
		{"100B", 100, true},
		{"8GB", 0, false},
		{"1.5GiB", 0, false},
		{"", 0, false},
		{"-1", 0, false},
		{"99999999999GiB", 0, false},
	}
	for _, tt := range tests {
		got, err := parseBytes(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
