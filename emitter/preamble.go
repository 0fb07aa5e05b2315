package emitter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"

	"github.com/evspool/evspool/internal/sockwait"
)

// PreambleFunc writes what must come first on a connection: a marker such
// as linuxptp-daemon's "CMD LIVE_START", a process's status lines. It is
// called on every new connection, by the drainer, before anything spooled is
// sent on it. What it writes to w goes to the receiver only: it is never
// spooled, never echoed, and not sent again on the next connection unless
// the hook writes it again. Each Write has Options.WriteTimeout; w may be
// used only until the hook returns.
//
// ctx ends when the emitter is closed, not after the dial timeout: the hook
// may wait as long as it needs (for the receiver to finish replaying its
// state, say), and meanwhile nothing spooled is sent. Waiting is neither a
// dial error nor an outage. It should return soon after ctx ends: Close
// waits for it, up to Close's own context.
//
// A hook that returns an error (or panics) fails the connection: it is
// closed, counted (Stats.PreambleErrors), logged (rate-limited), and a new
// one is dialled after a backoff.
type PreambleFunc func(ctx context.Context, w io.Writer) error

// ErrPreamble is matched by a failure of Options.Preamble, as Stats.LastError
// and the logs report it.
var ErrPreamble = errors.New("emitter: connection preamble failed")

// preambleState is the drainer's record of its preamble hook.
type preambleState struct {
	running atomic.Bool   // the hook is running: the drainer waits on it, by design
	errors  atomic.Uint64 // failed hooks and preamble writes
}

// preamble runs Options.Preamble on the connection just made. On failure
// the connection is dropped, and the error returned: connect backs off and
// dials again.
func (d *drainer) preamble() error {
	if d.opts.Preamble == nil {
		return nil
	}
	d.pre.running.Store(true)
	w := &preambleWriter{d: d, conn: d.w.conn}
	err := callPreamble(d.opts.Preamble, d.ctx, w)
	w.done.Store(true)
	d.pre.running.Store(false)
	d.w.room.ok = false // its writes took no reading after them: the next chunk takes one
	d.health.beat()
	if err == nil {
		return nil
	}
	d.disconnect()
	if d.ctx.Err() != nil {
		return d.ctx.Err() // closing: not a failure to report
	}
	err = fmt.Errorf("%w on %s: %w", ErrPreamble, d.addr, err)
	d.pre.errors.Add(1)
	d.record(func(*linkStats) {}, err)
	d.warns.preamble.warn(d.opts.Logger, "connection preamble failed; reconnecting",
		"addr", d.addr, "error", err.Error(), "pending_events", d.spool.Len())
	return err
}

// callPreamble calls the hook, turning a panic into an error: a bug in the
// daemon's hook fails connections (counted, logged), it does not take the
// drainer down with the process.
func callPreamble(f PreambleFunc, ctx context.Context, w io.Writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("preamble panicked: %v", r)
		}
	}()
	return f(ctx, w)
}

// preambleWriter writes the preamble to the connection it was made for,
// each write with a deadline, until the hook returns.
type preambleWriter struct {
	d    *drainer
	conn net.Conn
	done atomic.Bool
}

// errPreambleOver is what a hook's writer returns once the hook returned.
var errPreambleOver = errors.New("emitter: preamble writer used after the preamble returned")

func (w *preambleWriter) Write(p []byte) (int, error) {
	d := w.d
	if w.done.Load() {
		return 0, errPreambleOver
	}
	if d.ctx.Err() != nil {
		return 0, ErrClosed
	}
	if _, err := d.enterGate(); err != nil { // a Hold mid-preamble: see gate.go
		return 0, ErrClosed
	}
	defer d.leaveGate()
	if err := sockwait.ArmWrite(w.conn, d.opts.WriteTimeout); err != nil {
		return 0, err
	}
	n, err := w.conn.Write(p)
	if err != nil {
		err = fmt.Errorf("write to %s: %w", d.addr, err)
	}
	return n, err
}
