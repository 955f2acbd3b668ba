package process

import (
	"context"
	"path/filepath"
	"strings"
	"time"
)

// execIfSimple returns a startCmd as the shell is to run it: prefixed with "exec " when
// it is one simple command, so that the shell replaces itself with the program. The
// task's process is then the program itself: procName names it (BCS users write
// `startCmd: sleep 3600` with `procName: sleep`, which with the shell left in between
// failed the name check and restarted for ever), and stop signals reach it.
//
// Anything the shell has to stay for runs as written: lists and pipelines (; && || |),
// a command sent to the background with & (a daemon that writes pidFile), subshells and
// compound commands, here-documents, leading variable assignments, and shell builtins
// and keywords. Quotes and escapes also keep the command as written: the check does not
// parse them, and leaving the shell costs only the name check's convenience.
func execIfSimple(cmd string) string {
	trimmed := strings.TrimSpace(cmd)
	if trimmed == "" || strings.ContainsAny(trimmed, ";|()`{}'\"\\\n\r") || strings.Contains(trimmed, "$(") ||
		strings.Contains(trimmed, "<<") {
		return cmd
	}
	// ">&" and "<&" duplicate descriptors (2>&1); any other & ends a command.
	if strings.Contains(strings.NewReplacer(">&", "", "<&", "").Replace(trimmed), "&") {
		return cmd
	}
	first := strings.Fields(trimmed)[0]
	if strings.Contains(first, "=") || shellWords[first] || strings.ContainsAny(first[:1], "<>0123456789") && strings.ContainsAny(first, "<>") {
		return cmd
	}
	return "exec " + trimmed
}

// shellWords are the keywords and builtins a startCmd may begin with that must run in
// the shell itself (exec would fail, or change their meaning).
var shellWords = map[string]bool{
	"!": true, ".": true, ":": true, "[": true, "[[": true, "alias": true, "bg": true, "break": true, "case": true,
	"cd": true, "command": true, "continue": true, "do": true, "done": true, "elif": true, "else": true, "esac": true,
	"eval": true, "exec": true, "exit": true, "export": true, "false": true, "fg": true, "fi": true, "for": true,
	"function": true, "getopts": true, "hash": true, "if": true, "jobs": true, "local": true, "read": true,
	"readonly": true, "return": true, "select": true, "set": true, "shift": true, "source": true, "then": true,
	"time": true, "times": true, "trap": true, "true": true, "type": true, "ulimit": true, "umask": true,
	"unalias": true, "unset": true, "until": true, "wait": true, "while": true,
}

// shells are the names a startCmd's shell process has: a process found under one of them
// is the shell, not the program.
var shells = map[string]bool{"sh": true, "dash": true, "bash": true, "ash": true, "busybox": true}

// execWait is how long, after the start grace period, a task's process that is still the
// shell starting it may take to become the program: on a loaded node, or in a small
// memory cgroup, the held shell may not have run its exec yet when the grace period ends
// (a hundred tasks of 8 MB started at once on this project's 2-core VM failed the name
// check 42 times; with this wait, once).
const execWait = 5 * time.Second

// awaitName checks pid against procName (checkProcess); while pid is still a shell
// whose exec may be on its way, it looks again for up to execWait.
func awaitName(ctx context.Context, pid int, procName string) error {
	deadline := time.Now().Add(execWait)
	for {
		err := checkProcess(pid, procName)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if _, name := nameMatches(pid, procName); !shells[filepath.Base(name)] {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nameHint says how to fix a spec whose process, found under name, does not match
// procName.
func nameHint(found, procName string) string {
	if shells[filepath.Base(found)] {
		return "the task's process is the shell running startCmd: start the program with exec (`exec " + procName +
			" ...`), write its pid to pidFile, or set procName to " + found
	}
	return "set procName to " + found + " (the name of the program startCmd runs, as in /proc/PID/comm), or have startCmd write the program's pid to pidFile"
}
