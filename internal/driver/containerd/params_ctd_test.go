package containerd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v4 "github.com/berthhq/berth/api/v4"
	"github.com/berthhq/berth/internal/driver"
	"github.com/berthhq/berth/internal/driver/cpubind"
)

// What the Docker driver honours reaches the container under containerd too: a device
// node written to from inside, a CPU binding, and docker parameters (ulimit, sysctl,
// cap-add, add-host, ...) seen inside; a device that is no device node fails the start.
func TestDevicesCPUSetAndParameters(t *testing.T) {
	d, _ := newDriver(t, nil)

	t.Run("device", func(t *testing.T) {
		tk := task(t, "dev", "sleep 300")
		tk.Setup.Devices = []driver.Device{{HostPath: "/dev/null", ContainerPath: "/dev/berth-null"}}
		start(t, d, tk)
		out := execOK(t, d, tk.ID, "echo into-the-void > /dev/berth-null && echo wrote; busybox stat -c '%F %t:%T' /dev/berth-null")
		if out != "wrote\ncharacter special file 1:3\n" {
			t.Fatalf("in the container: %q", out)
		}
		plain := filepath.Join(t.TempDir(), "plain")
		if err := os.WriteFile(plain, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		bad := task(t, "baddev", "sleep 300")
		bad.Setup.Devices = []driver.Device{{HostPath: plain, ContainerPath: "/dev/x"}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := d.Start(ctx, bad)
		defer d.Remove(context.Background(), bad.ID)
		if err == nil || !strings.Contains(err.Error(), "device "+plain+": not a device node") {
			t.Fatalf("start with a plain file as a device: %v", err)
		}
	})

	t.Run("cpuset", func(t *testing.T) {
		tk := task(t, "cpu0", "sleep 300")
		tk.Container.Parameters = []v4.Parameter{{Key: "cpuset-cpus", Value: "0"}}
		st := start(t, d, tk)
		if out := execOK(t, d, tk.ID, "busybox grep Cpus_allowed_list /proc/1/status"); strings.Fields(out)[1] != "0" {
			t.Fatalf("cpus allowed: %q", out)
		}
		if st.Labels[labelCPUSet] != "0" {
			t.Fatalf("labels %v", st.Labels)
		}
		bound, err := d.boundCPUs(d.ctx(context.Background()))
		if err != nil || !bound[0] {
			t.Fatalf("bound cpus %v %v", bound, err)
		}
		nodes, err := cpubind.ReadTopology("/sys")
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, n := range nodes {
			total += len(n.CPUs)
		}
		big := task(t, "big", "sleep 300")
		big.CPURequest = float64(total + 1)
		big.Container.Parameters = []v4.Parameter{{Key: "cpuset", Value: "true"}}
		want := fmt.Sprintf("cpuset: %d cpus requested, the machine has %d", total+1, total)
		if _, err := d.Start(context.Background(), big); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("cpuset=true beyond the machine: %v, want %q", err, want)
		}
		if total > 1 { // CPU 0 is bound: cpuset=true takes another
			one := task(t, "one", "sleep 300")
			one.Container.Parameters = big.Container.Parameters
			one.CPURequest = 0.5
			st := start(t, d, one)
			if got := st.Labels[labelCPUSet]; got == "" || got == "0" {
				t.Fatalf("cpuset=true bound %q beside a container bound to 0", got)
			}
		}
	})

	t.Run("parameters", func(t *testing.T) {
		tk := task(t, "params", "sleep 300")
		tk.Setup.NetworkMode = "NONE" // net.* sysctls need a network namespace of the container's
		tk.Container.Parameters = []v4.Parameter{
			{Key: "ulimit", Value: "nofile=1000:2000"},
			{Key: "sysctl", Value: "net.core.somaxconn=1234"},
			{Key: "cap-add", Value: "NET_ADMIN"},
			{Key: "--add-host", Value: "db.local:10.1.2.3"},
			{Key: "env", Value: "FROM_PARAM=yes"},
			{Key: "read-only", Value: "true"},
			{Key: "tmpfs", Value: "/scratch:size=1m"},
			{Key: "label", Value: "team=infra"},
		}
		st := start(t, d, tk)
		out := execOK(t, d, tk.ID, `busybox grep "Max open files" /proc/1/limits; cat /proc/sys/net/core/somaxconn; `+
			`busybox grep CapEff /proc/1/status; busybox grep db.local /etc/hosts; echo $FROM_PARAM; `+
			`touch /x 2>/dev/null || echo read-only; touch /scratch/x && echo scratch`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 7 {
			t.Fatalf("in the container:\n%s", out)
		}
		if f := strings.Fields(lines[0]); len(f) < 5 || f[3] != "1000" || f[4] != "2000" {
			t.Errorf("nofile limits: %q", lines[0])
		}
		if lines[1] != "1234" {
			t.Errorf("somaxconn %q", lines[1])
		}
		capEff, err := strconv.ParseUint(strings.Fields(lines[2])[1], 16, 64)
		if err != nil || capEff&(1<<12) == 0 { // CAP_NET_ADMIN is 12
			t.Errorf("CapEff %q lacks CAP_NET_ADMIN", lines[2])
		}
		if strings.Join(strings.Fields(lines[3]), " ") != "10.1.2.3 db.local" {
			t.Errorf("hosts: %q", lines[3])
		}
		if lines[4] != "yes" || lines[5] != "read-only" || lines[6] != "scratch" {
			t.Errorf("env, read-only root, tmpfs: %q", lines[4:])
		}
		if st.Labels["team"] != "infra" {
			t.Errorf("labels %v", st.Labels)
		}
		bad := task(t, "badparam", "sleep 300")
		bad.Container.Parameters = []v4.Parameter{{Key: "log-driver", Value: "syslog"}}
		if _, err := d.Start(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "parameter log-driver: not supported by the containerd driver") {
			t.Fatalf("log-driver: %v", err)
		}
	})
}
