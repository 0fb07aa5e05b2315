package emitter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// PreambleFunc writes what must come first on each new connection, before
// anything spooled: a marker such as "CMD LIVE_START". What it writes goes
// to the receiver only, never spooled or echoed. Each Write has
// Options.WriteTimeout; w may be used only until the hook returns.
//
// ctx ends when the emitter is closed: the hook may wait as long as it needs,
// and waiting is not an outage; it should return soon after ctx ends.
// A hook that returns an error (or panics) fails the connection: it is
// closed, counted (Stats.PreambleErrors), logged, and redialled.
type PreambleFunc func(ctx context.Context, w io.Writer) error

// ErrPreamble is matched by a failure of Options.Preamble.
var ErrPreamble = errors.New("emitter: connection preamble failed")

// preambleState is the drainer's record of its preamble hook.
type preambleState struct {
	running atomic.Bool   // the hook is running: the drainer waits on it, by design
	errors  atomic.Uint64 // failed hooks and preamble writes
}

// preambleWriter writes the preamble, each write with a deadline and
// through the gate, until the hook returns.
type preambleWriter struct {
	d    *drainer
	done atomic.Bool
}

var errPreambleOver = errors.New("emitter: preamble writer used after the preamble returned")

func (w *preambleWriter) Write(p []byte) (int, error) {
	if w.done.Load() {
		return 0, errPreambleOver
	}
	return w.d.writeRaw(p)
}

// writeRaw writes p, which delivery does not count (the preamble, the
// state), through the one write path's gate and deadline (gatedWrite).
func (d *drainer) writeRaw(p []byte) (int, error) {
	n, _, err := d.gatedWrite(p, gateRaw)
	if n == 0 && d.ctx.Err() != nil {
		return 0, ErrClosed
	}
	if err != nil {
		err = fmt.Errorf("write to %s: %w", d.addr, err)
	}
	return n, err
}
