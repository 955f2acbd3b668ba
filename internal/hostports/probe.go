package hostports

import (
	"errors"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	v4 "github.com/berthhq/berth/api/v4"
)

// ConflictError is a start refused because host ports the task group was given are held
// by another program; the executor reports it as ReasonPortConflict with Ports.
type ConflictError struct {
	Ports []v4.BusyPort
}

func (e *ConflictError) Error() string {
	parts := make([]string, len(e.Ports))
	for i, p := range e.Ports {
		who := "another program"
		if p.Holder != "" {
			who = p.Holder
		}
		parts[i] = strconv.Itoa(p.Port) + "/" + p.Protocol + " is in use by " + who
	}
	noun := "host port "
	if len(parts) > 1 {
		noun = "host ports: "
	}
	return noun + strings.Join(parts, "; ")
}

// Checker checks a task group's host ports before its tasks start.
type Checker struct {
	// ProcRoot is where the kernel's tables are read to name a port's holder ("/proc"
	// when empty).
	ProcRoot string
	// listen binds a port the way a task would (tests replace it).
	listen func(protocol string, port int) error
}

// Check binds each port as its protocol says (tcp for tcp, http and https; udp for udp)
// on every address, as a task would, and releases it at once. A port that cannot be
// bound because it is in use is taken: it returns a *ConflictError naming every such
// port and, where /proc says it, its holder. Other bind errors (a port below 1024 for an
// agent that is not root) say nothing about other programs and are left to the task.
func (c *Checker) Check(ports []v4.AllocatedPort) error {
	listen := c.listen
	if listen == nil {
		listen = bindPort
	}
	var taken []v4.BusyPort
	seen := map[v4.BusyPort]bool{}
	for _, p := range ports {
		if p.HostPort <= 0 {
			continue
		}
		b := v4.BusyPort{Port: p.HostPort, Protocol: v4.Transport(p.Protocol)}
		if seen[b] {
			continue
		}
		seen[b] = true
		if err := listen(b.Protocol, b.Port); errors.Is(err, syscall.EADDRINUSE) {
			taken = append(taken, b)
		}
	}
	if len(taken) == 0 {
		return nil
	}
	c.name(taken)
	return &ConflictError{Ports: taken}
}

// Conflict builds the conflict of a start a driver refused as "port in use" (Docker's
// "port is already allocated"): the port of ports that its message names, else the ones
// a probe finds taken now, else all of them, since the driver said one was. The holders
// are named where /proc says them.
func (c *Checker) Conflict(msg string, ports []v4.AllocatedPort) *ConflictError {
	var named []v4.AllocatedPort
	if p, ok := PortIn(msg, ports); ok {
		named = []v4.AllocatedPort{p}
	} else {
		var ce *ConflictError
		if errors.As(c.Check(ports), &ce) {
			return ce
		}
		named = ports
	}
	var out []v4.BusyPort
	for _, p := range named {
		if b := (v4.BusyPort{Port: p.HostPort, Protocol: v4.Transport(p.Protocol)}); p.HostPort > 0 && !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	c.name(out)
	return &ConflictError{Ports: out}
}

// name sets the holder of each port that a process of /proc holds (best effort).
func (c *Checker) name(ports []v4.BusyPort) {
	root := c.ProcRoot
	if root == "" {
		root = "/proc"
	}
	socks, err := Bound(root)
	if err != nil {
		return
	}
	for i := range ports {
		for _, s := range socks {
			if s.Port == ports[i].Port && s.Protocol == ports[i].Protocol {
				if h := Holder(root, s.Inode); h != "" {
					ports[i].Holder = h
					break
				}
			}
		}
	}
}

// bindPort binds port on every address (":port" is the IPv6 wildcard, which also
// covers IPv4 and so conflicts with a holder of either) and closes it.
func bindPort(protocol string, port int) error {
	addr := ":" + strconv.Itoa(port)
	if protocol == "udp" {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return err
		}
		return pc.Close()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

// portInMessage finds ":PORT" in a driver's message, the way Docker writes the address it
// failed to bind ("Bind for 0.0.0.0:31000 failed", "listen tcp4 0.0.0.0:31000: bind").
var portInMessage = regexp.MustCompile(`:(\d{1,5})\b`)

// PortIn returns the port of ports that msg names first as ":PORT". Docker stops at the
// first binding it cannot make and names its host address first ("0.0.0.0:31000" in
// "0.0.0.0:31000:172.17.0.2:80/tcp", where 80 is the container's port).
func PortIn(msg string, ports []v4.AllocatedPort) (v4.AllocatedPort, bool) {
	for _, m := range portInMessage.FindAllStringSubmatch(msg, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		for _, p := range ports {
			if p.HostPort == n {
				return p, true
			}
		}
	}
	return v4.AllocatedPort{}, false
}

// InUseMessage reports a driver's error message that says a host port is taken: Docker's
// "port is already allocated" (its port allocator) and "address already in use" (its
// proxy's, or the kernel's, bind).
func InUseMessage(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "port is already allocated") || strings.Contains(m, "address already in use")
}
