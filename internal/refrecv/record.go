package refrecv

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Line is one received line.
type Line struct {
	// Data is the line without its newline.
	Data string
	// At is when the receiver read the line (time.Now, monotonic clock
	// included), for latency measurements.
	At time.Time
	// Conn numbers the connection the line came on: 1 for the first one
	// accepted since Start, counting across restarts.
	Conn int
}

// recorder keeps the lines in arrival order. It has its own lock so that
// recording never waits on connection bookkeeping.
type recorder struct {
	mu        sync.Mutex
	lines     []Line
	count     int
	countOnly bool
	out       io.Writer
	outErr    error
	changed   chan struct{} // made by a waiter, closed by the next record
}

// record appends one line and wakes the waiters.
func (rec *recorder) record(data []byte, conn int) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.count++
	if !rec.countOnly {
		// time.Now under the lock, so that times follow the recorded order.
		rec.lines = append(rec.lines, Line{Data: string(data), At: time.Now(), Conn: conn})
	}
	if rec.out != nil && rec.outErr == nil {
		buf := make([]byte, 0, len(data)+1)
		_, rec.outErr = rec.out.Write(append(append(buf, data...), '\n'))
	}
	if rec.changed != nil {
		close(rec.changed)
		rec.changed = nil
	}
}

// Lines returns a copy of the lines received so far, in arrival order.
func (r *Receiver) Lines() []string {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	out := make([]string, len(r.rec.lines))
	for i, l := range r.rec.lines {
		out[i] = l.Data
	}
	return out
}

// Received returns a copy of the lines received so far with their receive
// times and connection numbers.
func (r *Receiver) Received() []Line {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	return append([]Line(nil), r.rec.lines...)
}

// Count returns how many lines were received, kept or not.
func (r *Receiver) Count() int {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	return r.rec.count
}

// Reset forgets the lines received so far and sets Count back to 0.
func (r *Receiver) Reset() {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	r.rec.lines, r.rec.count = nil, 0
}

// OutErr returns the first error writing to Options.Out, after which the
// receiver stopped writing there (it keeps recording).
func (r *Receiver) OutErr() error {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	return r.rec.outErr
}

// WaitCount waits until at least n lines were received or ctx ends. It is
// the way for a test to wait for delivery without sleeping.
func (r *Receiver) WaitCount(ctx context.Context, n int) error {
	for {
		count, changed := r.rec.changes(n)
		if changed == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("refrecv: %d of %d lines received: %w", count, n, ctx.Err())
		case <-changed:
		}
	}
}

// changes returns the count and, if it is below n, a channel closed by the
// next record.
func (rec *recorder) changes(n int) (int, <-chan struct{}) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.count >= n {
		return rec.count, nil
	}
	if rec.changed == nil {
		rec.changed = make(chan struct{})
	}
	return rec.count, rec.changed
}
