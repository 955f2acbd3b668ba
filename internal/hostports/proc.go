// Package hostports finds host ports that programs other than berth's tasks hold
// (docs/scheduling.md, "Busy ports"): it reads the kernel's socket tables under /proc,
// finds which process holds a socket, and probes ports by binding them. The agent uses
// it to report its node's busy ports and to check a task group's ports before a start.
package hostports

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Socket is one bound socket of the kernel's tables.
type Socket struct {
	Port int
	// Protocol is "tcp" or "udp".
	Protocol string
	// Inode identifies the socket among the processes' file descriptors (Holder).
	Inode uint64
}

// Socket states of /proc/net/{tcp,udp} (include/net/tcp_states.h).
const (
	stateEstablished = 0x01 // a connected UDP socket
	stateClose       = 0x07 // an unconnected UDP socket: a server's
	stateListen      = 0x0A // a listening TCP socket
)

// tables are the files read, with their transport.
var tables = []struct{ file, protocol string }{
	{"tcp", "tcp"}, {"tcp6", "tcp"}, {"udp", "udp"}, {"udp6", "udp"},
}

// Bound returns the sockets that hold a port for servers: listening TCP sockets and
// unconnected UDP sockets, from procRoot's net/{tcp,tcp6,udp,udp6} (the network
// namespace of the reader; "/proc" on a node). Connected sockets are left out: they are
// clients' ports, which the kernel hands out from its own ephemeral range and which come
// and go too fast to report. A table that does not exist (no IPv6) is skipped.
func Bound(procRoot string) ([]Socket, error) {
	var out []Socket
	for _, t := range tables {
		f, err := os.Open(filepath.Join(procRoot, "net", t.file))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read sockets: %w", err)
		}
		socks, err := parseTable(f, t.protocol)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read sockets of %s: %w", filepath.Join(procRoot, "net", t.file), err)
		}
		out = append(out, socks...)
	}
	return out, nil
}

// parseTable parses one /proc/net table:
//
//	sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
//	 0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  0    0       12345 ...
//
// (IPv6 tables have 32 hex digits of address.) Lines it cannot read are skipped: the
// format is the kernel's, and one odd line must not hide the others.
func parseTable(r io.Reader, protocol string) ([]Socket, error) {
	var out []Socket
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 10 {
			continue
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil || !serving(protocol, st) {
			continue
		}
		_, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil || port == 0 {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, Socket{Port: int(port), Protocol: protocol, Inode: inode})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// serving reports a socket state that holds its port for a server.
func serving(protocol string, state uint64) bool {
	if protocol == "tcp" {
		return state == stateListen
	}
	return state == stateClose
}

// Holder names the process that holds the socket inode, "name (pid N)" (name from
// procRoot/PID/comm), or "" when none is found: it looks through every process's file
// descriptors, so it is for a few ports a start found taken, not for every scan. It is
// best effort: processes come and go, and another user's are unreadable to an agent
// that is not root.
func Holder(procRoot string, inode uint64) string {
	if inode == 0 {
		return ""
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	dirs, err := os.ReadDir(procRoot)
	if err != nil {
		return ""
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fdDir := filepath.Join(procRoot, d.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(fdDir, fd.Name())); err == nil && target == want {
				return processName(procRoot, pid)
			}
		}
	}
	return ""
}

// processName is "comm (pid N)", or "pid N" when comm cannot be read.
func processName(procRoot string, pid int) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm"))
	name := strings.TrimSpace(string(b))
	if err != nil || name == "" {
		return fmt.Sprintf("pid %d", pid)
	}
	return fmt.Sprintf("%s (pid %d)", name, pid)
}
