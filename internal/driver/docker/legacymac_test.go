package docker

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

const createWithMAC = `{"Image":"x","HostConfig":{"NetworkMode":"bridge"},` +
	`"NetworkingConfig":{"EndpointsConfig":{"bridge":{"MacAddress":"02:42:ac:11:00:4d"}}}}`

func TestLegacyMAC(t *testing.T) {
	out, err := legacyMAC([]byte(createWithMAC))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Image      string
		MacAddress string
		HostConfig struct{ NetworkMode string }
	}
	if err := json.Unmarshal(out, &got); err != nil || got.MacAddress != "02:42:ac:11:00:4d" || got.Image != "x" || got.HostConfig.NetworkMode != "bridge" {
		t.Errorf("with a MAC: %s (%v)", out, err)
	}
	for _, body := range []string{
		`{"Image":"x","HostConfig":{"NetworkMode":"bridge"},"NetworkingConfig":null}`,
		`{"Image":"x","HostConfig":{"NetworkMode":"mynet"},"NetworkingConfig":{"EndpointsConfig":{"bridge":{"MacAddress":"02:42:ac:11:00:4d"}}}}`,
		`{"Image":"x","HostConfig":{"NetworkMode":"mynet"},"NetworkingConfig":{"EndpointsConfig":{"mynet":{"IPAMConfig":{"IPv4Address":"10.1.0.5"}}}}}`,
	} {
		if out, err := legacyMAC([]byte(body)); err != nil || string(out) != body {
			t.Errorf("without a MAC of its network: %s -> %s (%v)", body, out, err)
		}
	}
	if _, err := legacyMAC([]byte("{")); err == nil {
		t.Error("a broken request passed")
	}
}

// roundTripFunc records what a transport passes on.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestMACTransport(t *testing.T) {
	var sent string
	tr := macTransport{base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		if r.ContentLength != int64(len(b)) {
			t.Errorf("%s: content length %d of %d bytes", r.URL.Path, r.ContentLength, len(b))
		}
		sent = string(b)
		return &http.Response{StatusCode: http.StatusCreated, Body: http.NoBody}, nil
	})}
	for _, c := range []struct {
		method, path string
		moved        bool
	}{
		{http.MethodPost, "/v1.41/containers/create", true},
		{http.MethodPost, "/v1.43/containers/create", true},
		{http.MethodPost, "/v1.44/containers/create", false},
		{http.MethodPost, "/v1.57/containers/create", false},
		{http.MethodPost, "/v1.41/containers/x/start", false},
	} {
		req, err := http.NewRequest(c.method, "http://docker"+c.path, bytes.NewReader([]byte(createWithMAC)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.RoundTrip(req); err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		var top struct{ MacAddress string }
		if err := json.Unmarshal([]byte(sent), &top); err != nil || (top.MacAddress == "02:42:ac:11:00:4d") != c.moved {
			t.Errorf("%s %s: sent %s (%v)", c.method, c.path, sent, err)
		}
	}
}
