package agent

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	v4 "github.com/berthhq/berth/api/v4"
)

// What the machine offers. The reserve kept for the system and the agent itself is
// documented in docs/agent.md (Resources): 5% of each resource, at least 0.1 core and
// 256 MB of memory, at most 1 core, 2 GB of memory and 10 GB of disk.

// Capacity measures the machine: cores, memory (MemTotal of /proc/meminfo) and the disk
// of the filesystem holding dataDir, in MB. A measure that fails is 0 (the scheduler
// then places nothing that requests it) and is returned as an error to log.
func Capacity(dataDir string) (v4.NodeResources, error) {
	r := v4.NodeResources{CPU: float64(runtime.NumCPU())}
	var errs []string
	mem, err := memTotalMB("/proc/meminfo")
	if err != nil {
		errs = append(errs, err.Error())
	}
	r.MemoryMB = mem
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dataDir, &fs); err != nil {
		errs = append(errs, fmt.Sprintf("disk size of %s: %v", dataDir, err))
	} else {
		r.DiskMB = math.Floor(float64(fs.Blocks) * float64(fs.Bsize) / (1 << 20))
	}
	if len(errs) > 0 {
		return r, fmt.Errorf("measure the machine: %s", strings.Join(errs, "; "))
	}
	return r, nil
}

// Allocatable is the capacity minus the system reserve.
func Allocatable(c v4.NodeResources) v4.NodeResources {
	reserve := func(v, lo, hi float64) float64 {
		r := min(max(v*0.05, lo), hi)
		return math.Max(0, math.Round((v-r)*100)/100)
	}
	return v4.NodeResources{
		CPU:      reserve(c.CPU, 0.1, 1),
		MemoryMB: math.Floor(reserve(c.MemoryMB, 256, 2048)),
		DiskMB:   math.Floor(reserve(c.DiskMB, 0, 10240)),
	}
}

// memTotalMB reads MemTotal (kB) from a meminfo file.
func memTotalMB(path string) (float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("memory size: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return 0, fmt.Errorf("memory size: MemTotal %q: %w", fields[1], err)
			}
			return math.Floor(kb / 1024), nil
		}
	}
	return 0, fmt.Errorf("memory size: no MemTotal in %s", path)
}

// detectIP returns the IPv4 address of the default route's interface, else the first
// non-loopback address of an interface that is up, else 127.0.0.1.
func detectIP() string {
	if name := defaultRouteInterface("/proc/net/route"); name != "" {
		if ifc, err := net.InterfaceByName(name); err == nil {
			if ip := firstIPv4(ifc); ip != "" {
				return ip
			}
		}
	}
	ifcs, _ := net.Interfaces()
	for i := range ifcs {
		if ifcs[i].Flags&net.FlagUp == 0 || ifcs[i].Flags&net.FlagLoopback != 0 {
			continue
		}
		if ip := firstIPv4(&ifcs[i]); ip != "" {
			return ip
		}
	}
	return "127.0.0.1"
}

// defaultRouteInterface returns the interface of the IPv4 default route in a
// /proc/net/route table (destination 00000000), or "".
func defaultRouteInterface(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[1] == "00000000" {
			return fields[0]
		}
	}
	return ""
}

func firstIPv4(ifc *net.Interface) string {
	addrs, err := ifc.Addrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
			return ipn.IP.String()
		}
	}
	return ""
}

// advertiseAddr is where the server reaches the agent: the configured address, else the
// bound one with the node's IP in place of an unspecified host (0.0.0.0, ::).
func advertiseAddr(configured string, bound net.Addr, ip string) string {
	if configured != "" {
		return configured
	}
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return bound.String()
	}
	if h := net.ParseIP(host); h == nil || h.IsUnspecified() {
		host = ip
	}
	return net.JoinHostPort(host, port)
}
