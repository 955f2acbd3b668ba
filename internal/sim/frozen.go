package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// A simulator started with a freeze file (berth sim --freeze-file F) freezes each node
// named on a line of F, and answers on F.frozen, a JSON FrozenNode a line: when the
// node's last beat left, from which `berth sim nodeloss` (another process) measures the
// node's TTL.

// FrozenFile is the file a simulator answers a freeze file's freezes in.
func FrozenFile(freezeFile string) string { return freezeFile + ".frozen" }

// AppendFrozen appends fn to the answers of the freeze file freezeFile.
func AppendFrozen(freezeFile string, fn FrozenNode) error {
	b, err := json.Marshal(fn)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(FrozenFile(freezeFile), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("frozen file: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("frozen file: %w", err)
	}
	return f.Close()
}

// WaitFrozen waits for a simulator's answer that node froze (its last line for node),
// until ctx ends.
func WaitFrozen(ctx context.Context, freezeFile, node string) (FrozenNode, error) {
	for {
		if fn, ok := readFrozen(freezeFile, node); ok {
			return fn, nil
		}
		if !sleep(ctx, 50*time.Millisecond) {
			return FrozenNode{}, fmt.Errorf("no simulator said node %s froze (%s): %w", node, FrozenFile(freezeFile), ctx.Err())
		}
	}
}

func readFrozen(freezeFile, node string) (FrozenNode, bool) {
	f, err := os.Open(FrozenFile(freezeFile))
	if err != nil {
		return FrozenNode{}, false
	}
	defer f.Close()
	var found FrozenNode
	ok := false
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		var fn FrozenNode
		if json.Unmarshal(lines.Bytes(), &fn) == nil && fn.Node == node {
			found, ok = fn, true
		}
	}
	return found, ok
}
