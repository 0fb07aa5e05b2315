package emitter

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// Emitter spools events durably and delivers them, in order, to a receiver.
// Its methods are safe for concurrent use.
type Emitter struct {
	addr  string
	opts  Options
	spool *wal.WAL
	link  *link // the drainer's doors

	echoMu sync.Mutex
	echo   []byte

	loss *ledger.Book // every loss, counted once (losses.go)

	emitted    atomic.Uint64
	echoErrors atomic.Uint64
	echoWarned bool // under echoMu; see echo.go
	closed     atomic.Bool
	closeOnce  sync.Once
	closeDone  chan struct{} // closed when the first Close has finished
	closeErr   error

	writerRefused atomic.Uint64 // see writer.go
	stateWarn     stateWarn     // see state.go
	atOpen        wal.Stats     // the spool as Open found it, before any delivery
}

// Open opens (or creates) the spool in spoolDir and starts delivering what is
// pending, and what Emit adds, to the receiver at addr. A damaged spool is
// salvaged (logged as a warning); a spool held by another process fails with
// an error matching wal.ErrLocked.
func Open(addr, spoolDir string, opts *Options) (*Emitter, error) {
	return OpenContext(context.Background(), addr, spoolDir, opts)
}

// OpenContext is Open, cancelled by ctx: the start-up scan of a large spool
// stops when ctx ends, and OpenContext then returns an error matching
// ctx.Err() with the spool released as it was.
func OpenContext(ctx context.Context, addr, spoolDir string, opts *Options) (*Emitter, error) {
	e, _, err := open(ctx, addr, spoolDir, opts)
	return e, err
}

// open is OpenContext, which also returns the drainer it started (for the
// package's tests: the Emitter itself holds only its link).
func open(ctx context.Context, addr, spoolDir string, opts *Options) (*Emitter, *drainer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	if addr == "" {
		return nil, nil, errors.New("emitter: no receiver address: give the socket path (or host:port for tcp)")
	}
	loss := ledger.New(ledger.Config{Logger: o.Logger, Now: o.Clock.Now, Interval: o.WarnInterval, MaxAge: o.MaxAge})
	spool, err := wal.Open(spoolDir, &wal.Options{MaxBytes: o.MaxSpoolBytes, OnFull: o.OnFull, NoSync: o.NoSync,
		Context: ctx, Clock: o.Clock, Logger: o.Logger, OnLoss: loss.Lost, MaxStateKeys: o.MaxStateKeys})
	if err != nil {
		return nil, nil, err
	}
	var salvaged uint64
	if r := spool.Salvaged(); r != nil {
		salvaged = r.Missing
		logSalvage(o.Logger, r, "spool", spoolDir)
	}
	e := &Emitter{addr: addr, opts: o, spool: spool, loss: loss, closeDone: make(chan struct{}), atOpen: spool.Stats(),
		stateWarn: stateWarn{rep: newReporter(&o)}}
	loss.Open(spool, salvaged)
	d := newDrainer(addr, &e.opts, spool, e.loss)
	e.link = d.link
	go d.run()
	return e, d, nil
}

// AtOpen returns the spool's figures as Open found them, before the drainer
// delivered anything: the backlog a restart replays.
func (e *Emitter) AtOpen() wal.Stats { return e.atOpen }

// Validate checks an event against the wire format and a size limit (its
// newline included) and returns it without its one allowed trailing newline.
func Validate(event []byte, maxSize int) ([]byte, error) {
	event = bytes.TrimSuffix(event, []byte{'\n'})
	if len(event)+1 > maxSize {
		return nil, &EventSizeError{Size: len(event) + 1, Limit: maxSize}
	}
	if bytes.IndexByte(event, '\n') >= 0 {
		return nil, ErrNewline
	}
	return event, nil
}

// Emit validates the events, commits them to the spool in one transaction
// (grouped with concurrent callers), hands them to the drainer and echoes
// them to Options.Stdout; it never waits on the network. (While the drainer
// idles caught up, Emit writes them to the receiver itself, where the send
// buffer has room for them whole.) If any event is invalid,
// nothing is emitted and all are counted as refused. If the spool fails or
// the Emitter is closed, the events are still echoed and the error matches
// ErrSpool (and ErrClosed after Close). Under the Block policy Emit waits
// for space until ctx ends. The events of one call are committed whole or
// not at all: events that together need more than the spool can ever hold
// are refused (wal.ErrTooLarge, counted not spooled) even where each would
// fit alone, so a caller batching into a small spool keeps each call to a
// fraction of MaxSpoolBytes (evspool run: a sixteenth).
func (e *Emitter) Emit(ctx context.Context, events ...[]byte) error {
	clean, err := e.validateAll(events)
	if err != nil {
		e.Refuse(len(events), err)
		return err
	}
	if e.closed.Load() {
		e.loss.Note(ledger.NotSpooled, uint64(len(clean)), "reason", "closed")
		e.writeEcho(clean)
		return fmt.Errorf("%w: %w", ErrSpool, ErrClosed)
	}
	var begin time.Time
	if e.opts.OnCommit != nil {
		begin = e.opts.Clock.Now()
	}
	last, err := e.spool.AppendState(ctx, clean, e.stateOps(clean))
	if e.opts.OnCommit != nil {
		e.opts.OnCommit(e.opts.Clock.Now().Sub(begin), len(clean), err)
	}
	e.link.pub.health.noteCommit(err) // for Ready
	e.loss.Tick()                     // what the commit dropped to make room is logged now
	if err != nil {
		e.loss.Note(notSpooledKind(err, e.opts.OnFull), uint64(len(clean)), "reason", spoolFailure(err), "error", err.Error())
		if errors.Is(err, wal.ErrClosed) {
			err = fmt.Errorf("%w: %w", ErrClosed, err) // Close won the race
		}
		err = fmt.Errorf("%w: %w", ErrSpool, err)
	} else {
		e.emitted.Add(uint64(len(clean)))
		e.warnStateRefused()
		e.link.handoff(committed{first: last - uint64(len(clean)) + 1, events: clean})
	}
	e.writeEcho(clean)
	return err
}

// validateAll strips trailing newlines, copying events only if one had one.
func (e *Emitter) validateAll(events [][]byte) ([][]byte, error) {
	clean, copied := events, false
	for i, ev := range events {
		c, err := Validate(ev, e.opts.MaxEventSize)
		if err != nil {
			return nil, err
		}
		if len(c) != len(ev) {
			if !copied {
				clean, copied = slices.Clone(events), true
			}
			clean[i] = c
		}
	}
	return clean, nil
}
