package containerd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/berthhq/berth/internal/crilog"
	"github.com/berthhq/berth/internal/logfile"
)

// A task's output goes to its log through a logging binary the shim starts (containerd's
// "binary" log URI): the shim hands it the read ends of the task's stdout and stderr as
// descriptors 3 and 4 and waits until it closes descriptor 5. The logger is the shim's
// child, not the agent's, so output keeps reaching the log in the CRI format (crilog)
// while the agent is down or restarts; it ends when the task's last process has closed
// both pipes. The logger is berth's own executable called by another name (LoggerName),
// as busybox is, so nothing else has to be installed on the node.

// LoggerName is the name berth's executable is called by to run as a task's logger.
const LoggerName = "berth-containerd-log"

// RunLoggerIfCalled runs the logger and exits when the process was called LoggerName.
func RunLoggerIfCalled() {
	if filepath.Base(os.Args[0]) != LoggerName {
		return
	}
	if err := RunLogger(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, LoggerName+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// EnsureLogger makes dir/LoggerName a link to the running executable (replacing one
// that points elsewhere: an upgraded agent) and returns its path.
func EnsureLogger(dir string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("logger: own executable: %w", err)
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return "", fmt.Errorf("logger: own executable: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("logger: %w", err)
	}
	link := filepath.Join(dir, LoggerName)
	if cur, err := os.Readlink(link); err == nil && cur == exe {
		return link, nil
	}
	tmp := link + ".new"
	os.Remove(tmp)
	if err := os.Symlink(exe, tmp); err != nil {
		return "", fmt.Errorf("logger: %w", err)
	}
	// Renamed over the old one: a shim starting a logger meanwhile finds one or the other.
	if err := os.Rename(tmp, link); err != nil {
		return "", fmt.Errorf("logger: %w", err)
	}
	return link, nil
}

// loggerArgs are the logger's arguments for a log at path: flag pairs, since the shim
// passes them in no particular order.
func loggerArgs(path string, lim logfile.Limits) map[string]string {
	args := map[string]string{"--path": path}
	if lim.Rotates() {
		args["--max-size"] = fmt.Sprint(lim.MaxBytes)
		args["--max-files"] = fmt.Sprint(lim.MaxFiles)
	}
	return args
}

// RunLogger is the logger's main: it appends what descriptors 3 (stdout) and 4 (stderr)
// carry to the log named by --path as CRI records, rotating it per --max-size and
// --max-files, until both end.
func RunLogger(args []string) error {
	fs := flag.NewFlagSet(LoggerName, flag.ContinueOnError)
	path := fs.String("path", "", "the log file")
	var lim logfile.Limits
	fs.Int64Var(&lim.MaxBytes, "max-size", 0, "bytes per file (0: no rotation)")
	fs.IntVar(&lim.MaxFiles, "max-files", 0, "files in all")
	if err := fs.Parse(args); err != nil {
		return err
	}
	stdout, stderr, ready := os.NewFile(3, "stdout"), os.NewFile(4, "stderr"), os.NewFile(5, "ready")
	if stdout == nil || stderr == nil || ready == nil {
		return errors.New("descriptors 3, 4 and 5 are not open: run by containerd's shim only")
	}
	if !filepath.IsAbs(*path) {
		ready.Close()
		return fmt.Errorf("--path %q: must be absolute", *path)
	}
	dst, err := openLogFile(*path, lim)
	// Ready either way: the shim waits for this, and a task without a log still runs.
	ready.Close()
	if err != nil {
		io.Copy(io.Discard, io.MultiReader(stdout, stderr))
		return err
	}
	defer dst.Close()
	w := crilog.NewWriter(dst)
	var wg sync.WaitGroup
	for stream, r := range map[string]*os.File{crilog.Stdout: stdout, crilog.Stderr: stderr} {
		wg.Go(func() {
			io.Copy(w.Stream(stream), r) // a log that fails to write loses output, not the task
			r.Close()
		})
	}
	wg.Wait()
	return nil
}

// openLogFile opens the log for appending, behind a Rotator when the limits rotate it.
func openLogFile(path string, lim logfile.Limits) (io.WriteCloser, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o711); err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	// 0640: the log is the task's, not every user's.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	if !lim.Rotates() {
		return f, nil
	}
	prepare := func(f *os.File) error { return f.Chmod(0o640) }
	return logfile.NewRotator(f, path, lim, prepare, nil), nil
}
