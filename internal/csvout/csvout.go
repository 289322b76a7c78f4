// Package csvout is a run's stdout: the CSV rows a run prints, written
// so that a reader that is slow, paused or gone never stops the run.
package csvout

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// Writer is a run's stdout. Writes never wait for its reader: rows go
// to a bounded queue that a goroutine writes out, so a paused pager, a
// stopped terminal or a slow log shipper never stops the run (a rented
// server staying up while a sweep waits on a pipe). When stdout goes away
// (a reader that closed the pipe: `benchrun PLAN | head -2`) or falls
// more than QueueBytes behind, it says so once on stderr and drops what
// follows: the run goes on, and every row is still in the run directory.
type Writer struct {
	w, stderr io.Writer
	mu        sync.Mutex
	wake      *sync.Cond
	pending   []byte
	writing   bool
	closed    bool // stdout went away or fell behind: rows are dropped
	ended     bool
	started   bool
}

// QueueBytes is how far stdout's reader may fall behind before rows on
// stdout are dropped (several thousand rows).
const QueueBytes = 8 << 20

// DrainWait is how long the end of a run waits for stdout's reader to
// take what is queued.
const DrainWait = 5 * time.Second

// New is a run's stdout writing to w, saying on stderr when rows go
// unwritten.
func New(w, stderr io.Writer) *Writer {
	o := &Writer{w: w, stderr: stderr}
	o.wake = sync.NewCond(&o.mu)
	return o
}

// Terminal says whether the CSV goes to a terminal (a person reading it
// beside the progress view, not a file or a pipe).
func (o *Writer) Terminal() bool {
	f, ok := o.w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (o *Writer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.ended {
		return len(p), nil
	}
	if len(o.pending)+len(p) > QueueBytes {
		o.closed = true
		o.pending = nil
		fmt.Fprintf(o.stderr, "benchrun: stdout is not being read (%d MiB of CSV waiting: a paused pager or terminal?): no more CSV rows on stdout; the run goes on, and every row is in the run directory (cells.csv)\n", QueueBytes>>20)
		return len(p), nil
	}
	o.pending = append(o.pending, p...)
	if !o.started {
		o.started = true
		go o.writeOut()
	}
	o.wake.Broadcast()
	return len(p), nil
}

// writeOut writes what is queued, as the reader takes it.
func (o *Writer) writeOut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for {
		for len(o.pending) == 0 && !o.ended {
			o.wake.Wait()
		}
		if len(o.pending) == 0 || o.closed {
			o.writing = false
			o.wake.Broadcast()
			return
		}
		b := o.pending
		o.pending = nil
		o.writing = true
		o.mu.Unlock()
		_, err := o.w.Write(b)
		o.mu.Lock()
		o.writing = false
		if err != nil && !o.closed {
			o.closed = true
			o.pending = nil
			fmt.Fprintf(o.stderr, "benchrun: stdout closed (%v): no more CSV rows on stdout; the run goes on, and every row is in the run directory (cells.csv)\n", err)
		}
		o.wake.Broadcast()
	}
}

// Close waits, up to DrainWait, for stdout's reader to take the rows
// queued, and says so when it would not.
func (o *Writer) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = true
	o.wake.Broadcast()
	timer := time.AfterFunc(DrainWait, func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		if len(o.pending) > 0 || o.writing {
			fmt.Fprintf(o.stderr, "benchrun: stdout did not take the last %d bytes of CSV within %v; every row is in the run directory (cells.csv)\n", len(o.pending), DrainWait)
			o.closed, o.pending = true, nil
			o.writing = false
		}
		o.wake.Broadcast()
	})
	defer timer.Stop()
	for o.started && !o.closed && (len(o.pending) > 0 || o.writing) {
		o.wake.Wait()
	}
}
