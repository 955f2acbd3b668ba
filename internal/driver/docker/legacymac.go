package docker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/docker/go-connections/sockets"
	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/versions"
)

// Daemons older than API 1.44 (Docker 20.10 speaks 1.41) take a container's MAC address
// from its config's MacAddress and ignore the one of its network's endpoint, which is
// the only place the API module has for it. So the client's transport copies the
// endpoint's address to the config in the create requests sent to such a daemon.

// macConfigAPI is the first API version that reads the endpoint's MAC address.
const macConfigAPI = "1.44"

// newClient is a client for host whose create requests carry the MAC address where the
// daemon's API version reads it. The transport is returned too: the client closes the
// idle connections only of a transport of its own.
func newClient(host string) (*client.Client, *http.Transport, error) {
	u, err := client.ParseHostURL(host)
	if err != nil {
		return nil, nil, err
	}
	// The client's own defaults: few idle connections, released soon.
	tr := &http.Transport{MaxIdleConns: 6, IdleConnTimeout: 30 * time.Second}
	if err := sockets.ConfigureTransport(tr, u.Scheme, u.Host); err != nil {
		return nil, nil, err
	}
	hc := &http.Client{Transport: macTransport{base: tr}, CheckRedirect: client.CheckRedirect}
	cli, err := client.New(client.WithHost(host), client.WithHTTPClient(hc), client.WithAPIVersionNegotiation())
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, err
	}
	return cli, tr, nil
}

// macTransport rewrites the container create requests of API versions before
// macConfigAPI (legacyMAC) and passes everything else on as it is.
type macTransport struct{ base http.RoundTripper }

func (t macTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	version, path, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, "/v"), "/")
	if req.Method != http.MethodPost || path != "containers/create" || req.Body == nil ||
		!versions.LessThan(version, macConfigAPI) {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("container create request: %w", err)
	}
	if body, err = legacyMAC(body); err != nil {
		return nil, fmt.Errorf("container create request: %w", err)
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(r)
}

// legacyMAC sets the config's MacAddress of a create request to the MAC address of the
// endpoint of the container's network mode; a request without one is returned as is.
func legacyMAC(body []byte) ([]byte, error) {
	var req struct {
		HostConfig *struct {
			NetworkMode string
		}
		NetworkingConfig *struct {
			EndpointsConfig map[string]*struct {
				MacAddress string
			}
		}
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	if req.HostConfig == nil || req.NetworkingConfig == nil {
		return body, nil
	}
	ep := req.NetworkingConfig.EndpointsConfig[req.HostConfig.NetworkMode]
	if ep == nil || ep.MacAddress == "" {
		return body, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, err
	}
	mac, err := json.Marshal(ep.MacAddress)
	if err != nil {
		return nil, err
	}
	fields["MacAddress"] = mac
	return json.Marshal(fields)
}
