package emitter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrWriterClosed is returned by a Writer's Write after its Close.
var ErrWriterClosed = errors.New("emitter: writer closed")

// Writer is an io.Writer over an Emitter: what is written is split into
// lines, and each complete line is emitted as one event (spooled, echoed,
// delivered in order). It lets a daemon hand a child process's output to
// the emitter (cmd.Stdout = em.Writer()) and keep its fmt.Fprintf call
// sites.
//
// A partial line waits in the Writer for its newline; Close emits it. A line
// over Options.MaxEventSize (its newline included) is not cut: it is
// refused whole, without being held in memory, counted as lost as the
// Emitter's Refuse counts it (Stats.Refused, Stats.WriterRefused) and logged
// (rate-limited), and Write returns an error matching
// ErrEventTooLarge that gives its size and the limit; the other lines of the
// Write are emitted. A spool failure returns an error matching ErrSpool (the
// lines were echoed). In both cases Write still reports len(p) bytes taken.
//
// Each Writer has its own partial-line buffer: give each stream (each child
// process) its own Writer, all on one Emitter. A Writer is safe for
// concurrent use, but lines written concurrently to one Writer in pieces may
// be interleaved, as with any shared stream.
//
// Under the Block full-spool policy, Write waits for space: the writer's
// producer is held back (a child process blocks on its stdout).
type Writer struct {
	e *Emitter

	// OnError, if set before the first Write, receives each error Write
	// would return (a refused line, a spool failure), and Write then
	// returns nil: for an io.Copy, such as the one os/exec runs for
	// cmd.Stdout, which would otherwise stop at the first error and leave
	// the child writing to a closed pipe. ErrClosed and ErrWriterClosed are
	// returned all the same. It is called with the Writer's lock held: it
	// must not write to this Writer.
	OnError func(error)

	mu      sync.Mutex
	partial []byte
	skipped int // bytes so far of a refused line awaiting its newline; 0 if none
	closed  bool
}

// Writer returns a new Writer over e, with its own partial-line buffer.
func (e *Emitter) Writer() *Writer {
	return &Writer{e: e}
}

// Write emits each complete line of p; see Writer.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return 0, ErrWriterClosed
	}
	var events [][]byte
	var errs []error
	for rest := p; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			w.hold(rest)
			break
		}
		line := rest[:i]
		rest = rest[i+1:]
		if w.skipped > 0 {
			errs = append(errs, w.refuse(w.skipped+len(line)+1))
			w.skipped = 0
			continue
		}
		if len(w.partial) > 0 {
			line = append(w.partial, line...)
			w.partial = w.partial[:0]
		}
		if len(line)+1 > w.e.opts.MaxEventSize {
			errs = append(errs, w.refuse(len(line)+1))
			continue
		}
		events = append(events, bytes.Clone(line))
	}
	if len(events) > 0 {
		if err := w.e.Emit(context.Background(), events...); err != nil {
			if errors.Is(err, ErrClosed) {
				return 0, err
			}
			errs = append(errs, err)
		}
	}
	return len(p), w.report(errors.Join(errs...))
}

// hold keeps the start of a line until its newline comes; a line already
// over the limit is only measured.
func (w *Writer) hold(b []byte) {
	if w.skipped > 0 {
		w.skipped += len(b)
		return
	}
	if len(w.partial)+len(b)+1 > w.e.opts.MaxEventSize {
		w.skipped = len(w.partial) + len(b)
		w.partial = w.partial[:0]
		return
	}
	w.partial = append(w.partial, b...)
}

// refuse counts and logs a line of size bytes (its newline included) over
// the limit, and returns its error.
func (w *Writer) refuse(size int) error {
	w.e.writerRefused.Add(1)
	err := fmt.Errorf("emitter: writer: line refused, not cut: %w", &EventSizeError{Size: size, Limit: w.e.opts.MaxEventSize})
	w.e.Refuse(1, err)
	return err
}

func (w *Writer) report(err error) error {
	if err != nil && w.OnError != nil {
		w.OnError(err)
		return nil
	}
	return err
}

// Close emits the partial line left without a newline, if any (a refused
// one is reported as Write reports it), and makes later Writes fail with
// ErrWriterClosed. It does not close the Emitter. A second Close returns nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	switch {
	case w.skipped > 0:
		return w.report(w.refuse(w.skipped + 1))
	case len(w.partial) > 0:
		err := w.e.Emit(context.Background(), bytes.Clone(w.partial))
		w.partial = nil
		if errors.Is(err, ErrClosed) {
			return err
		}
		return w.report(err)
	}
	return nil
}
