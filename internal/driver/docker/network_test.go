package docker

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/testutil/loopback"
)

// httpdTask serves body on port with busybox httpd.
func httpdTask(t *testing.T, d *Driver, name string, port int, body string) *driver.Task {
	p := strconv.Itoa(port)
	return newTask(t, d, name, imgPlain, "/bin/sh", "-c",
		"mkdir -p /www && echo "+body+" > /www/index.html && exec httpd -f -p "+p+" -h /www")
}

// httpGet fetches url, retrying while the server comes up.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	cl := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := cl.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestBridgePortsAndJoin(t *testing.T) {
	d := parallelDriver(t)
	hostPort := loopback.FreePort(t)
	web := httpdTask(t, d, "web", 8080, "ok-bridge")
	web.Setup.Hostname = "web-host"
	web.Setup.PortBindings = []driver.PortBinding{{Name: "http", ContainerPort: 8080, HostPort: hostPort, Protocol: "tcp"}, {Name: "unmapped", ContainerPort: 9090}}
	st := mustStart(t, d, web)
	if st.Info.NetworkMode != "bridge" || st.Info.IPAddress == "" || st.Info.Hostname != "web-host" || st.Info.Pid == 0 || st.Info.StartAt.IsZero() {
		t.Fatalf("info: %+v", st.Info)
	}
	if got := httpGet(t, "http://127.0.0.1:"+strconv.Itoa(hostPort)+"/"); got != "ok-bridge\n" {
		t.Fatalf("through the host port: %q", got)
	}
	if pb := rawInspect(t, web.ID).HostConfig.PortBindings; len(pb) != 1 {
		t.Fatalf("port 0 published: %v", pb)
	}

	side := newTask(t, d, "side", imgPlain, "/bin/sleep", "30")
	side.Setup.NetworkMode, side.Setup.JoinTask = "", web.ID
	sst := mustStart(t, d, side)
	if sst.Info.NetworkMode != "user" || sst.Info.IPAddress != st.Info.IPAddress {
		t.Fatalf("joined info: %+v, want the first's IP %s", sst.Info, st.Info.IPAddress)
	}
	r, err := d.Exec(ctxT(t, 10*time.Second), side.ID, "wget -qO- http://127.0.0.1:8080/")
	if err != nil || r.ExitCode != 0 || string(r.Output) != "ok-bridge\n" {
		t.Fatalf("joined container to 127.0.0.1: %q %d %v", r.Output, r.ExitCode, err)
	}

	gone := newTask(t, d, "gone", imgPlain, "/bin/sleep", "30")
	gone.Setup.NetworkMode, gone.Setup.JoinTask = "", "test.no.such"
	if _, err := d.Start(ctxT(t, 10*time.Second), gone); err == nil || !strings.Contains(err.Error(), "network of test.no.such to join") {
		t.Fatalf("joining nothing: %v", err)
	}
}

func TestHostNetwork(t *testing.T) {
	d := parallelDriver(t)
	port := loopback.FreePort(t)
	web := httpdTask(t, d, "web", port, "ok-host")
	web.Setup.NetworkMode = "HOST"
	st := mustStart(t, d, web)
	if st.Info.NetworkMode != "host" {
		t.Fatalf("info: %+v", st.Info)
	}
	if got := httpGet(t, "http://127.0.0.1:"+strconv.Itoa(port)+"/"); got != "ok-host\n" {
		t.Fatalf("host network: %q", got)
	}
	none := newTask(t, d, "none", imgPlain, "/bin/sleep", "30")
	none.Setup.NetworkMode = "NONE"
	if st := mustStart(t, d, none); st.Info.NetworkMode != "none" || st.Info.IPAddress != "" {
		t.Fatalf("none: %+v", st.Info)
	}
	if err := d.Stop(context.Background(), none.ID, 0); err != nil {
		t.Fatal(err)
	}
}

// TestMACAddress is the mac-address parameter on the bridge: the container's interface
// has it, whichever API version the daemon speaks.
func TestMACAddress(t *testing.T) {
	d := parallelDriver(t)
	task := newTask(t, d, "mac", imgPlain, "/bin/sleep", "30")
	task.Container.Parameters = []v4.Parameter{{Key: "mac-address", Value: "02:42:ac:11:00:4d"}}
	mustStart(t, d, task)
	ep := rawInspect(t, task.ID).NetworkSettings.Networks["bridge"]
	if ep == nil || ep.MacAddress.String() != "02:42:ac:11:00:4d" {
		t.Errorf("bridge endpoint %+v, want MAC 02:42:ac:11:00:4d", ep)
	}
	r, err := d.Exec(ctxT(t, 10*time.Second), task.ID, "cat /sys/class/net/eth0/address")
	if err != nil || strings.TrimSpace(string(r.Output)) != "02:42:ac:11:00:4d" {
		t.Errorf("eth0 in the container: %q %v", r.Output, err)
	}
}
