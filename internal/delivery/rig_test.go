package delivery_test

import (
	"slices"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/delivery"
)

// These tests step delivery alone through its API (Step, Ready, Advance):
// no socket, no sleep, time is a number.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// The policy's figures, as the tests expect them.
const (
	tcpPace   = 10 * time.Millisecond
	idleCheck = 100 * time.Millisecond
)

func testConfig(mode delivery.Mode) delivery.Config {
	return delivery.Config{Mode: mode, WindowBytes: 300, Linger: 2 * time.Second, StallAfter: 30 * time.Second,
		WarnAfter: 5 * time.Second, StuckAfter: 5 * time.Second, WriteTimeout: 5 * time.Second,
		MaxAttempts: 3, Batch: 100, Backoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, CrashPause: 5 * time.Second}
}

// lines returns n lines of size bytes from seq from.
func lines(from uint64, n, size int) []delivery.Line {
	out := make([]delivery.Line, n)
	for i := range out {
		out[i] = delivery.Line{Seq: from + uint64(i), Size: size}
	}
	return out
}

// rig steps a Delivery and keeps the last Ready (its notes copied).
type rig struct {
	t  require.TestingT
	d  *delivery.Delivery
	rd delivery.Ready
}

func newRig(t require.TestingT, cfg delivery.Config) *rig {
	return &rig{t: t, d: delivery.New(cfg)}
}

// step is one round: Step, Ready, Advance.
func (r *rig) step(in delivery.Input) delivery.Ready {
	require.NoError(r.t, r.d.Step(in))
	rd := r.d.Ready()
	rd.Notes = slices.Clone(rd.Notes)
	r.d.Advance()
	r.rd = rd
	return rd
}

func (r *rig) restore(oldest uint64, s delivery.Strikes) delivery.Ready {
	return r.step(delivery.Input{Kind: delivery.Restore, Now: t0, Seq: oldest, Strikes: s})
}

func (r *rig) connected(ms int) delivery.Ready {
	return r.step(delivery.Input{Kind: delivery.Connected, Now: at(ms), Reads: true})
}

func (r *rig) wrote(ms int, ls []delivery.Line, mem int) delivery.Ready {
	return r.step(delivery.Input{Kind: delivery.Wrote, Now: at(ms), Lines: ls, N: mem})
}

// read is a SIOCOUTQ reading of unread bytes at ms.
func (r *rig) read(ms, unread int) delivery.Ready {
	return r.step(delivery.Input{Kind: delivery.Read, Now: at(ms), N: unread})
}

func (r *rig) tick(ms int) delivery.Ready {
	return r.step(delivery.Input{Kind: delivery.Tick, Now: at(ms)})
}

// hungUp is the receiver gone at ms; reset: with bytes unread.
func (r *rig) hungUp(ms int, reset bool) delivery.Ready {
	if reset {
		return r.step(delivery.Input{Kind: delivery.Failed, Now: at(ms), Cause: delivery.CauseReset})
	}
	return r.step(delivery.Input{Kind: delivery.Failed, Now: at(ms), Cause: delivery.CauseGone})
}

// next asks what to write at ms, the spool's oldest pending being the one
// after the last acknowledged.
func (r *rig) next(ms int) (delivery.Send, bool) {
	rd := r.step(delivery.Input{Kind: delivery.Next, Now: at(ms), Seq: r.rd.Acked + 1})
	return rd.Send, rd.SendOK
}

// fin is the receiver's FIN at ms; it reports whether it ends the connection.
func (r *rig) fin(ms, unread int) bool {
	return r.step(delivery.Input{Kind: delivery.Fin, Now: at(ms), N: unread}).Drop == delivery.DropFin
}

func (r *rig) setAside(seq uint64) delivery.Ready {
	return r.step(delivery.Input{Kind: delivery.SetAside, Now: t0, Seq: seq})
}

// writeRead writes ls in one write and has the receiver read all of it.
func (r *rig) writeRead(ms int, ls []delivery.Line) delivery.Ready {
	r.wrote(ms, ls, 0)
	return r.read(ms, 0)
}
