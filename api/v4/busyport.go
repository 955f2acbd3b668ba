package v4

import (
	"fmt"
	"strconv"
	"strings"
)

// Host ports held by programs other than berth's tasks (docs/scheduling.md, "Busy
// ports"): agents report them with their node, the scheduler never gives them out, and a
// start that finds one of its ports taken ends with ReasonPortConflict.

// BusyPort is a host port a program other than berth's tasks holds on a node.
type BusyPort struct {
	Port int `json:"port"`
	// Protocol is the transport, "tcp" or "udp".
	Protocol string `json:"protocol"`
	// Holder names the program, "name (pid N)", when the agent looked it up (it does
	// so for the ports a start found taken, not for every port it reports).
	Holder string `json:"holder,omitempty"`
}

// String reads like "31000/tcp held by nginx (pid 812)".
func (b BusyPort) String() string {
	s := strconv.Itoa(b.Port) + "/" + b.Protocol
	if b.Holder != "" {
		s += " held by " + b.Holder
	}
	return s
}

// MaxBusyPorts bounds a node's status.busyPorts: a machine whose random range is full of
// other programs' sockets must not make its node object grow without end.
const MaxBusyPorts = 256

// maxHolderLen bounds BusyPort.Holder (a command name and a pid).
const maxHolderLen = 64

// ReasonPortConflict is TaskGroupStatus.Reason of a run that did not start because host
// ports it was given were held by another program on the node (PortsTaken names them).
const ReasonPortConflict = "PortConflict"

// Transport is the transport of a port's protocol: "udp" for udp, "tcp" for the rest
// (http and https ride on tcp, and an empty protocol defaults to tcp).
func Transport(protocol string) string {
	if strings.EqualFold(protocol, "udp") {
		return "udp"
	}
	return "tcp"
}

// PortsString lists ports as "31000/tcp held by nc (pid 7), 31001/udp".
func PortsString(ports []BusyPort) string {
	parts := make([]string, len(ports))
	for i, p := range ports {
		parts[i] = p.String()
	}
	return strings.Join(parts, ", ")
}

// validateBusyPorts checks an agent's report: at most MaxBusyPorts ports 1-65535, tcp or
// udp, each once.
func validateBusyPorts(path string, ports []BusyPort, errs *FieldErrors) {
	if len(ports) > MaxBusyPorts {
		errs.add(path, "must list at most %d ports, got %d", MaxBusyPorts, len(ports))
		return
	}
	seen := make(map[string]bool, len(ports))
	for i, p := range ports {
		ip := indexPath(path, i)
		if p.Port < 1 || p.Port > 65535 {
			errs.add(ip+".port", "must be a port number 1-65535, got %d", p.Port)
		}
		oneOf(ip+".protocol", p.Protocol, errs, "tcp", "udp")
		if len(p.Holder) > maxHolderLen {
			errs.add(ip+".holder", "must be at most %d characters, got %d", maxHolderLen, len(p.Holder))
		}
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if seen[key] {
			errs.add(ip, "lists %s twice", key)
		}
		seen[key] = true
	}
}

// AgentBusyPorts is the body of PUT /v1/agent/nodes/{name}/busyports: the node's busy
// ports as its agent now sees them (the whole list; an empty one clears it).
type AgentBusyPorts struct {
	BusyPorts []BusyPort `json:"busyPorts"`
}

// ValidateBusyPorts checks an agent's busy ports (MaxBusyPorts, port numbers, tcp or
// udp, each once), with field paths under busyPorts.
func ValidateBusyPorts(ports []BusyPort) FieldErrors {
	var errs FieldErrors
	validateBusyPorts("busyPorts", ports, &errs)
	return errs
}
