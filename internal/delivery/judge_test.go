package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/delivery"
)

// The caller reports what ended a connection; delivery judges whether the
// receiver hung up having read everything (its reads prove the lines before
// its last read handled), hung up with bytes unread (they prove nothing new,
// and the connection handled nothing: back off), or was dropped by the
// caller (nobody blamed, dial again at once).
func TestDeliveryFailedCause(t *testing.T) {
	tests := map[string]struct {
		cause   delivery.Cause
		unread  int
		ack     uint64
		dialNow bool
	}{
		"gone, all read":      {delivery.CauseGone, 0, 5, true},
		"gone, bytes unread":  {delivery.CauseGone, 3, 0, false},
		"reset":               {delivery.CauseReset, 0, 0, false},
		"broken pipe":         {delivery.CauseBroken, 0, 0, false},
		"its FIN":             {delivery.CauseFin, 0, 0, false},
		"a reason of its own": {delivery.CauseOwn, 0, 0, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := newRig(t, testConfig(delivery.LastRead))
			d.restore(1, delivery.Strikes{})
			d.connected(0)
			require.Zero(t, d.writeRead(0, lines(1, 5, 100)).AckThrough)
			d.wrote(1, lines(6, 5, 100), 0)
			r := d.step(delivery.Input{Kind: delivery.Failed, Now: at(2), Cause: tc.cause, N: tc.unread})
			assert.Equal(t, tc.ack, r.AckThrough)
			assert.Equal(t, tc.dialNow, r.DialAt.Equal(at(2)), "dial at %v", r.DialAt)
			assert.False(t, r.Connected)
			assert.True(t, r.Isolating, "what is not known handled is resent, isolated")
		})
	}
}

// An acknowledgement proves handling only where the socket shows the
// receiver's reads and the mode waits for them.
func TestDeliveryProven(t *testing.T) {
	tests := map[string]struct {
		mode   delivery.Mode
		reads  bool
		proven bool
	}{
		"reads seen":               {delivery.LastRead, true, true},
		"reads not seen":           {delivery.LastRead, false, false},
		"a fixed window":           {delivery.FixedBytes, true, true},
		"no window":                {delivery.NoWindow, true, false},
		"TCP, lingered":            {delivery.KernelTook, false, false},
		"a window, reads not seen": {delivery.FixedBytes, false, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.proven, provenAt(t, tc.mode, tc.reads))
		})
	}
}

// provenAt is Ready.Proven on the first acknowledgement of a connection.
func provenAt(t *testing.T, mode delivery.Mode, reads bool) bool {
	t.Helper()
	d := newRig(t, testConfig(mode))
	d.step(delivery.Input{Kind: delivery.Connected, Now: at(0), Reads: reads})
	for ms, seq := 0, uint64(1); ms <= 5000; ms, seq = ms+1000, seq+1 {
		if r := d.writeRead(ms, lines(seq, 1, 400)); r.AckThrough != 0 {
			return r.Proven
		}
	}
	r := d.tick(10000)
	require.NotZero(t, r.AckThrough, "lingered")
	return r.Proven
}

// Waiting for room in the send buffer: looked at less and less often, up
// to WriteTimeout, then given up.
func TestDeliveryNoRoom(t *testing.T) {
	d := newRig(t, testConfig(delivery.LastRead))
	d.connected(0)
	for ms, want := range map[int]time.Duration{0: 50 * time.Microsecond, 1: time.Millisecond, 3: 2 * time.Millisecond, 500: 50 * time.Millisecond,
		3000: idleCheck, 5000: idleCheck} {
		look, timedOut := d.d.Room(at(ms), at(0))
		assert.False(t, timedOut, "after %d ms", ms)
		assert.Equal(t, want, look, "after %d ms", ms)
	}
	look, timedOut := d.d.Room(at(5001), at(0))
	assert.True(t, timedOut, "past WriteTimeout")
	assert.Zero(t, look)
}

// The idle looks at the socket after idleCheck only when something needs
// it; a send made meanwhile by another goroutine replans the idle when it
// needs a look or a wake the idle does not have, and else puts the look off.
func TestDeliveryIdle(t *testing.T) {
	park := func(d *rig, ms int, f delivery.IdleFacts) delivery.Ready {
		return d.step(delivery.Input{Kind: delivery.Park, Now: at(ms), Idle: f})
	}
	recheck := func(d *rig, ms int, f delivery.IdleFacts) delivery.Ready {
		return d.step(delivery.Input{Kind: delivery.Recheck, Now: at(ms), Idle: f})
	}
	caughtUp := func(t *testing.T) *rig {
		d := newRig(t, testConfig(delivery.LastRead))
		d.connected(0)
		d.writeRead(0, lines(1, 1, 100))
		d.writeRead(1, lines(2, 1, 100))
		d.tick(3000) // all handled: nothing to wake for
		require.False(t, d.rd.Wakes)
		return d
	}
	t.Run("looks", func(t *testing.T) {
		for name, f := range map[string]delivery.IdleFacts{"held": {Holding: true},
			"unwatched": {Unwatched: true}, "acks pending": {AcksPending: true}} {
			assert.Equal(t, idleCheck, park(caughtUp(t), 3000, f).Look, name)
		}
		assert.Zero(t, park(caughtUp(t), 3000, delivery.IdleFacts{}).Look, "nothing needs a look")
		d := caughtUp(t)
		d.wrote(3000, lines(3, 1, 100), 0)
		assert.Equal(t, idleCheck, park(d, 3000, delivery.IdleFacts{}).Look, "bytes unread")
	})
	t.Run("an unread send replans an idle without a look", func(t *testing.T) {
		d := caughtUp(t)
		require.Zero(t, park(d, 3000, delivery.IdleFacts{}).Look)
		d.wrote(3001, lines(3, 1, 100), 0)
		assert.True(t, recheck(d, 3001, delivery.IdleFacts{}).Replan)
	})
	t.Run("a look planned is soon enough, and put off", func(t *testing.T) {
		d := caughtUp(t)
		d.writeRead(3000, lines(3, 1, 100)) // it lingers until 5000
		require.Equal(t, idleCheck, park(d, 3000, delivery.IdleFacts{AcksPending: true}).Look)
		d.writeRead(3001, lines(4, 1, 100)) // a later wake
		r := recheck(d, 3001, delivery.IdleFacts{})
		assert.False(t, r.Replan)
		assert.Equal(t, idleCheck, r.Look)
	})
	t.Run("a wake sooner than the idle's replans", func(t *testing.T) {
		d := caughtUp(t)
		require.Zero(t, park(d, 3000, delivery.IdleFacts{}).Look)
		d.writeRead(3001, lines(3, 1, 100)) // read: it lingers until 5001
		r := recheck(d, 3001, delivery.IdleFacts{})
		require.True(t, r.Wakes)
		assert.True(t, r.Replan)
		d = caughtUp(t)
		d.writeRead(3000, lines(3, 1, 100))
		park(d, 3000, delivery.IdleFacts{AcksPending: true})
		assert.False(t, recheck(d, 3001, delivery.IdleFacts{}).Replan, "the same wake")
	})
}

// Once the socket path appears (the receiver is binding), refused dials are
// retried within milliseconds, a bounded number of times; then the backoff
// again.
func TestDeliveryDialAfterAppeared(t *testing.T) {
	d := newRig(t, testConfig(delivery.LastRead))
	failed := func() time.Duration {
		r := d.step(delivery.Input{Kind: delivery.DialFailed, Now: t0})
		return r.DialAt.Sub(t0)
	}
	assert.Equal(t, 10*time.Millisecond, failed(), "the backoff's first pause")
	d.step(delivery.Input{Kind: delivery.Appeared, Now: t0})
	assert.Equal(t, t0, d.rd.DialAt, "dial at once")
	var quick []time.Duration
	for range 25 {
		quick = append(quick, failed())
	}
	assert.Equal(t, []time.Duration{250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond}, quick[:3])
	for _, p := range quick[3:] {
		assert.Equal(t, 2*time.Millisecond, p)
	}
	assert.Equal(t, 100*time.Millisecond, failed(), "25 quick dials, then the backoff (at MaxBackoff by now)")
}
