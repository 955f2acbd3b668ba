package shim

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/berthhq/berth/internal/crilog"
)

// drainWait bounds how long a task's end waits for its output to reach the log: a
// process that ended has closed its pipes, so the copy is done within microseconds; one
// the task left running that holds them would hold the exit record forever.
const drainWait = 500 * time.Millisecond

// output is the task's stdout and stderr: two pipes whose write ends the task gets and
// whose read ends the shim copies into the log as records, one writer for both so that
// records never interleave. The copy goes on while any process holds a write end (a
// daemon the start command left), and ends at the end of both pipes or with the shim.
type output struct {
	log              *crilog.Writer
	taskOut, taskErr *os.File // the task's ends, until it is started
	done             chan struct{}
}

// newOutput opens the pipes and starts copying them into log. The task's ends belong to
// the task's user (cred), as its log file did: a process that opens its own output again
// (/dev/stdout) is checked against the pipe's owner.
func newOutput(log io.Writer, cred *Cred) (*output, error) {
	o := &output{log: crilog.NewWriter(log), done: make(chan struct{})}
	var readers []*os.File
	for _, end := range []**os.File{&o.taskOut, &o.taskErr} {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(readers...)
			closeAll(o.taskOut)
			return nil, fmt.Errorf("output pipe: %w", err)
		}
		if cred != nil {
			if err := w.Chown(int(cred.UID), int(cred.GID)); err != nil {
				closeAll(append(readers, r, w, o.taskOut)...)
				return nil, fmt.Errorf("output pipe: %w", err)
			}
		}
		readers = append(readers, r)
		*end = w
	}
	var wg sync.WaitGroup
	for i, stream := range []string{crilog.Stdout, crilog.Stderr} {
		r := readers[i]
		wg.Go(func() {
			io.Copy(o.log.Stream(stream), r) // a log that fails to write loses output, not the task
			r.Close()
		})
	}
	go func() {
		wg.Wait()
		close(o.done)
	}()
	return o, nil
}

// started closes the shim's copies of the task's ends, so the pipes end with the last
// process of the task that holds them.
func (o *output) started() {
	closeAll(o.taskOut, o.taskErr)
	o.taskOut, o.taskErr = nil, nil
}

// drain waits until both pipes have ended, or for at most wait.
func (o *output) drain(wait time.Duration) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-o.done:
	case <-t.C:
	}
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
