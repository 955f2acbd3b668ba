package execstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	v4 "github.com/berthhq/berth/api/v4"
)

// RunFunc runs the command of a session with its input, output and terminal sizes, and
// returns its exit code. ctx ends when the client goes away.
type RunFunc func(ctx context.Context, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error)

// inputQueue is how many input frames wait for a command that does not read them.
const inputQueue = 64

// Serve is the agent's side of an upgraded connection: it feeds the client's frames to
// run and sends its output, then the Exit frame. r reads the connection (it may be a
// buffered reader holding bytes the HTTP server read ahead); conn is closed on return,
// and when ctx ends, which also ends run.
func Serve(ctx context.Context, conn io.ReadWriteCloser, r io.Reader, run RunFunc) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { conn.Close() }) // unblocks the reader
	defer stop()
	defer conn.Close()

	fw := &frameWriter{w: conn}
	stdinR, stdinW := io.Pipe()
	resize := make(chan v4.TermSize, 8)
	// Input goes through a queue to its own writer, so a command that does not read
	// its input yet (it waits for the terminal size) does not hold up the resizes.
	input := make(chan []byte, inputQueue)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stdinW.Close()
		for p := range input {
			if p == nil {
				stdinW.Close() // the client's stdin ended
				continue
			}
			// After the end of input or of the command this fails: the rest is dropped,
			// and the loop goes on so the reader never blocks.
			stdinW.Write(p)
		}
	})
	wg.Go(func() {
		defer close(resize)
		err := pumpIn(r, input, resize)
		if err != nil {
			cancel() // the client went away: end the command
		}
	})
	code, runErr := run(ctx, stdinR, streamWriter{fw: fw, typ: FrameStdout}, resize)
	// A command that did not read all its input must not keep the reader blocked.
	stdinR.CloseWithError(errors.New("the command ended"))
	exit := v4.ExecExit{Code: code}
	if runErr != nil {
		exit.Error = runErr.Error()
	}
	err := fw.writeJSON(FrameExit, exit)
	conn.Close()
	wg.Wait()
	return err
}

// pumpIn feeds the client's frames to the command until the connection ends, which it
// returns as an error (a client that leaves before the command ends stops it). input
// gets the input bytes, and nil for its end; pumpIn closes it.
func pumpIn(r io.Reader, input chan<- []byte, resize chan<- v4.TermSize) error {
	defer close(input)
	for {
		typ, p, err := readFrame(r)
		if err != nil {
			return fmt.Errorf("exec stream: %w", err)
		}
		switch typ {
		case FrameStdin:
			input <- p
		case FrameStdinEOF:
			input <- nil
		case FrameResize:
			var s v4.TermSize
			if json.Unmarshal(p, &s) == nil && s.Rows > 0 && s.Cols > 0 {
				select {
				case resize <- s:
				default: // the command is behind; a later size follows
				}
			}
		}
	}
}

// Attach is the client's side: it sends stdin (nil: none) and the terminal sizes, writes
// the output to stdout, and returns the command's exit code once the Exit frame arrives.
// An error means the command did not run (Exit.Error) or the connection broke. conn is
// closed on return, and when ctx ends.
//
// Reading stdin cannot be interrupted (a terminal blocks until a key is pressed), so the
// goroutine that copies it is the only one Attach does not wait for: it ends at the next
// read once the connection is closed, or with the process.
func Attach(ctx context.Context, conn io.ReadWriteCloser, stdin io.Reader, stdout io.Writer, resize <-chan v4.TermSize) (int, error) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	fw := &frameWriter{w: conn}
	done := make(chan struct{})
	if stdin == nil {
		if err := fw.write(FrameStdinEOF, nil); err != nil {
			return 0, err
		}
	} else {
		go func() {
			if _, err := io.Copy(streamWriter{fw: fw, typ: FrameStdin}, stdin); err == nil {
				fw.write(FrameStdinEOF, nil)
			}
		}()
	}
	var wg sync.WaitGroup
	defer func() {
		close(done) // ends the resize goroutine
		wg.Wait()
	}()
	if resize != nil {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				case s, ok := <-resize:
					if !ok {
						return
					}
					if fw.writeJSON(FrameResize, s) != nil {
						return
					}
				}
			}
		})
	}
	for {
		typ, p, err := readFrame(conn)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, fmt.Errorf("the exec stream broke before the command ended: %w", err)
		}
		switch typ {
		case FrameStdout:
			if _, err := stdout.Write(p); err != nil {
				return 0, fmt.Errorf("write the output: %w", err)
			}
		case FrameExit:
			var e v4.ExecExit
			if err := json.Unmarshal(p, &e); err != nil {
				return 0, fmt.Errorf("decode the exit status: %w", err)
			}
			if e.Error != "" {
				return e.Code, errors.New(e.Error)
			}
			return e.Code, nil
		}
	}
}
