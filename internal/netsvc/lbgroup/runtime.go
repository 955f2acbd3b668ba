package lbgroup

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// runtimeCommands are the runtime API commands that take HAProxy from plan old to plan
// new, which have one shape (render): a slot that empties goes to maintenance (no new
// connection; established ones finish), a slot that fills gets its address and weight
// and then is made ready, a weight that changes is set.
func runtimeCommands(old, new *plan) []string {
	var out []string
	for bi, nb := range new.backends {
		ob := old.backends[bi]
		for i, ns := range nb.slots {
			os := ob.slots[i]
			srv := fmt.Sprintf("%s/s%d", nb.name, i)
			switch {
			case ns == os:
			case ns.addr == "":
				out = append(out, "set server "+srv+" state maint")
			default:
				if ns.addr != os.addr {
					host, port, _ := net.SplitHostPort(ns.addr)
					out = append(out, "set server "+srv+" addr "+host+" port "+port)
				}
				if ns.weight != os.weight || os.addr == "" {
					out = append(out, "set server "+srv+" weight "+strconv.Itoa(ns.weight))
				}
				if os.addr == "" {
					out = append(out, "set server "+srv+" state ready")
				}
			}
		}
	}
	return out
}

// commandsPerCall bounds the commands sent on one connection to the runtime API.
const commandsPerCall = 200

// runCommands sends cmds to the runtime API at socket, a batch per connection, and
// fails on the first answer that is not empty or a known acknowledgement.
func runCommands(ctx context.Context, socket string, cmds []string) error {
	for len(cmds) > 0 {
		n := min(len(cmds), commandsPerCall)
		if err := runBatch(ctx, socket, cmds[:n]); err != nil {
			return err
		}
		cmds = cmds[n:]
	}
	return nil
}

func runBatch(ctx context.Context, socket string, cmds []string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("haproxy runtime API: %w", err)
	}
	defer conn.Close()
	deadline := time.Now().Add(10 * time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte(strings.Join(cmds, ";") + "\n")); err != nil {
		return fmt.Errorf("haproxy runtime API: %w", err)
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || acknowledged(line) {
			continue
		}
		return fmt.Errorf("haproxy runtime API refused %q: %s", truncate(strings.Join(cmds, ";"), 200), truncate(line, 200))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("haproxy runtime API: %w", err)
	}
	return nil
}

// acknowledged reports whether an answer of the runtime API says a command worked (the
// address change answers what it changed).
func acknowledged(line string) bool {
	return strings.HasPrefix(line, "IP changed from") || strings.HasPrefix(line, "no need to change") ||
		strings.HasPrefix(line, "port changed from") || strings.HasPrefix(line, "IP and port changed")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
