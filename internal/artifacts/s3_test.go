package artifacts

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/store"
	"github.com/berthhq/berth/internal/store/storetest"
)

// fakeS3 serves a real S3 protocol implementation (gofakes3, in memory) on loopback
// with bucket "arts"; it returns host:port.
func fakeS3(t *testing.T) (string, *s3mem.Backend) {
	t.Helper()
	be := s3mem.New()
	if err := be.CreateBucket("arts"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(be, gofakes3.WithLogger(gofakes3.DiscardLog())).Server())
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), be
}

// createS3Repo stores the secret "s3creds" and the artifactrepository name of ns on
// endpoint.
func createS3Repo(t *testing.T, ns, name, endpoint string, def bool) {
	t.Helper()
	ctx := context.Background()
	sec := &v4.Secret{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindSecret},
		Metadata: v4.ObjectMeta{Name: "s3creds", Namespace: ns},
		Datas: map[string]v4.SecretData{"ak": {Content: base64.StdEncoding.EncodeToString([]byte("AKIDTEST"))},
			"sk": {Content: base64.StdEncoding.EncodeToString([]byte("very-secret-key"))}}}
	if err := testStore.Create(ctx, sec, store.Raw{}); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatal(err)
	}
	repo := &v4.ArtifactRepository{TypeMeta: v4.TypeMeta{APIVersion: v4.APIVersion, Kind: v4.KindArtifactRepository},
		Metadata: v4.ObjectMeta{Name: name, Namespace: ns},
		Spec: v4.ArtifactRepositorySpec{Default: def, S3: &v4.S3ArtifactRepository{Endpoint: endpoint, Bucket: "arts",
			KeyPrefix: "berth", Insecure: true, AccessKeySecret: v4.SecretKeyRef{Name: "s3creds", Key: "ak"},
			SecretKeySecret: v4.SecretKeyRef{Name: "s3creds", Key: "sk"}}}}
	if err := testStore.Create(ctx, repo, store.Raw{}); err != nil {
		t.Fatal(err)
	}
}

func TestS3RoundTrip(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	endpoint, be := fakeS3(t)
	createS3Repo(t, "ns", "bucket", endpoint, false)
	r := NewRouter(RouterConfig{Store: testStore, AllowPrivateEndpoints: true, Logger: storetest.QuietLogger()})
	cases := []struct {
		name string
		size int
	}{{"empty", 0}, {"small", 1000}, {"multipart", s3PartSize + 12345}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := bytes.Repeat([]byte{'a', 'b', 'c'}, c.size/3+1)[:c.size]
			key := "ns/wf/u1/n1/" + c.name
			got, err := r.Put(ctx, "ns", "bucket", key, bytes.NewReader(data), 64<<20)
			if err != nil {
				t.Fatal(err)
			}
			if got.Repository != "bucket" || got.Size != int64(c.size) || got.Digest != digestOf(data) {
				t.Fatalf("stored %+v", got)
			}
			if _, err := be.HeadObject("arts", "berth/"+key); err != nil {
				t.Fatalf("the object is not at the key prefix: %v", err)
			}
			// A Get naming no repository finds it through its record.
			rc, info, err := r.Get(ctx, "ns", "", key)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || !bytes.Equal(b, data) || info.Size != int64(c.size) {
				t.Fatalf("read back %d bytes (info %+v), err %v; want %d", len(b), info, err, c.size)
			}
		})
	}
	if err := r.Delete(ctx, "ns", "ns/wf/u1/n1/small"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.Get(ctx, "ns", "bucket", "ns/wf/u1/n1/small"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get after delete: %v, want ErrNotFound", err)
	}
}

func TestS3TooLargeLeavesNothing(t *testing.T) {
	storetest.Reset(t, testStore)
	ctx := context.Background()
	endpoint, be := fakeS3(t)
	createS3Repo(t, "ns", "bucket", endpoint, true)
	r := NewRouter(RouterConfig{Store: testStore, AllowPrivateEndpoints: true, Logger: storetest.QuietLogger()})
	// Past the bound in the first read, and in the parts of a multipart upload.
	for _, c := range []struct{ size, max int }{{101, 100}, {s3PartSize + 1, 100}, {s3PartSize + 1, s3PartSize}} {
		_, err := r.Put(ctx, "ns", "", "ns/big", bytes.NewReader(make([]byte, c.size)), int64(c.max))
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("put of %d over %d: %v, want ErrTooLarge", c.size, c.max, err)
		}
	}
	if _, err := be.HeadObject("arts", "berth/ns/big"); err == nil {
		t.Fatal("an object was kept after a refused put")
	}
	if rec, err := r.Lookup(ctx, "ns/big"); err != nil || rec != nil {
		t.Fatalf("record after a refused put: %+v %v", rec, err)
	}
}

// Without the flag, the server does not dial a loopback endpoint, and no error shows
// the credentials.
func TestS3RefusesLoopbackEndpoint(t *testing.T) {
	storetest.Reset(t, testStore)
	endpoint, _ := fakeS3(t)
	createS3Repo(t, "ns", "bucket", endpoint, false)
	r := NewRouter(RouterConfig{Store: testStore, Logger: storetest.QuietLogger()})
	_, err := r.Put(context.Background(), "ns", "bucket", "ns/x", strings.NewReader("x"), 10)
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("put to a loopback endpoint: %v, want a refusal naming loopback", err)
	}
	if strings.Contains(err.Error(), "very-secret-key") {
		t.Fatalf("the error shows the secret key: %v", err)
	}
}

func TestRouterRefusesKeysOutsideTheNamespace(t *testing.T) {
	storetest.Reset(t, testStore)
	r := NewRouter(RouterConfig{Store: testStore, Embedded: openTestEmbedded(t, t.TempDir()), Logger: storetest.QuietLogger()})
	ctx := context.Background()
	if _, err := r.Put(ctx, "a", "", "a/x", strings.NewReader("x"), 10); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a/x", "b/../a/x", "/b/x", "b//x", "b/x\n", "b/./x", ""} {
		if _, err := r.Put(ctx, "b", "", key, strings.NewReader("y"), 10); err == nil {
			t.Errorf("put of %q from namespace b accepted", key)
		}
	}
	if _, _, err := r.Get(ctx, "b", "", "a/x"); err == nil {
		t.Error("namespace b read namespace a's embedded artifact")
	}
	if _, _, err := r.Get(ctx, "b", "nope", "b/x"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "artifactrepository b/nope") {
		t.Errorf("get from a missing repository: %v", err)
	}
}

func TestRefusedAddr(t *testing.T) {
	own := hostAddrs
	hostAddrs = func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil }
	t.Cleanup(func() { hostAddrs = own })
	for _, c := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1", false}, {"::1", false}, {"10.1.2.3", false}, {"172.16.0.1", false}, {"192.168.1.1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"0.0.0.0", false}, {"::", false}, {"fd00::1", false},
		{"::ffff:127.0.0.1", false}, {"100.64.0.1", false}, {"224.0.0.1", false},
		{"0.1.2.3", false}, {"255.255.255.255", false}, {"64:ff9b::7f00:1", false}, {"64:ff9b::a9fe:a9fe", false},
		{"203.0.113.7", false}, // the server's own (public) address: its API, its etcd
		{"8.8.8.8", true}, {"2001:4860:4860::8888", true}, {"52.216.0.1", true}, {"64:ff9b::808:808", true},
	} {
		why := refusedAddr(netip.MustParseAddr(c.addr))
		if (why == "") != c.ok {
			t.Errorf("%s: refused %q, want allowed %v", c.addr, why, c.ok)
		}
	}
}
