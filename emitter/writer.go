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

// Writer is an io.Writer over an Emitter that emits each complete line as
// one event, for a child process's output (cmd.Stdout = em.Writer()) or
// fmt.Fprintf call sites.
//
// A partial line waits for its newline; Close emits it. A line over
// Options.MaxEventSize is refused whole, without being held in memory,
// counted (Stats.Refused, Stats.WriterRefused) and logged, and Write returns
// an error matching ErrEventTooLarge; the other lines are emitted. A spool
// failure returns an error matching ErrSpool. Either way Write reports
// len(p) bytes taken. Under the Block policy Write waits for space.
//
// A Writer is safe for concurrent use, but lines written to it concurrently
// in pieces may be interleaved: give each stream its own Writer.
type Writer struct {
	e *Emitter

	// OnError, if set before the first Write, receives each error Write
	// would return, and Write then returns nil, so that an io.Copy (os/exec's
	// for cmd.Stdout) does not stop at the first refused line. ErrClosed and
	// ErrWriterClosed are returned all the same. It is called with the
	// Writer's lock held and must not write to this Writer.
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

// hold keeps a partial line; one already over the limit is only measured.
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

// refuse counts and logs a line of size bytes over the limit.
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

// Close emits the partial line left, if any, and makes later Writes fail
// with ErrWriterClosed; it does not close the Emitter. A second Close is nil.
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
