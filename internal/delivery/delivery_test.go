package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/delivery"
)

func TestDeliveryWindow(t *testing.T) {
	tests := map[string]struct {
		mode  delivery.Mode
		steps func(d *rig) delivery.Ready
		want  uint64 // acknowledged through
	}{
		"last read: one read holds all": {delivery.LastRead, func(d *rig) delivery.Ready {
			return d.writeRead(0, lines(1, 40, 100))
		}, 0},
		"last read: a later read proves the earlier handled": {delivery.LastRead, func(d *rig) delivery.Ready {
			d.writeRead(0, lines(1, 40, 100))
			return d.writeRead(1, lines(41, 1, 100))
		}, 40},
		"last read: a write read in part is not read": {delivery.LastRead, func(d *rig) delivery.Ready {
			d.writeRead(0, lines(1, 3, 100))
			d.wrote(1, lines(4, 3, 100), 0)
			d.wrote(1, lines(7, 3, 100), 0)
			return d.read(1, 300) // the last write's bytes are held
		}, 3},
		"last read: socket memory above the payload errs towards unread": {delivery.LastRead, func(d *rig) delivery.Ready {
			d.writeRead(0, lines(1, 2, 100))
			d.wrote(1, lines(3, 1, 100), 0)
			d.wrote(1, lines(4, 1, 100), 0)
			return d.read(1, 150) // more than the newest write's payload
		}, 0},
		"last read: measured memory maps exactly": {delivery.LastRead, func(d *rig) delivery.Ready {
			d.writeRead(0, lines(1, 2, 100))
			d.wrote(1, lines(3, 1, 100), 900)
			d.wrote(1, lines(4, 1, 100), 900)
			return d.read(1, 900)
		}, 2},
		"linger: read 2 s ago, still connected": {delivery.LastRead, func(d *rig) delivery.Ready {
			d.writeRead(0, lines(1, 5, 100))
			return d.tick(2000)
		}, 5},
		"linger: not yet": {delivery.LastRead, func(d *rig) delivery.Ready {
			d.writeRead(0, lines(1, 5, 100))
			return d.tick(1999)
		}, 0},
		"fixed: 300 bytes after it": {delivery.FixedBytes, func(d *rig) delivery.Ready {
			return d.writeRead(0, lines(1, 10, 100))
		}, 7},
		"none: read is handled": {delivery.NoWindow, func(d *rig) delivery.Ready {
			return d.writeRead(0, lines(1, 10, 100))
		}, 10},
		"hang-up forgets linger": {delivery.LastRead, func(d *rig) delivery.Ready {
			d.writeRead(0, lines(1, 5, 100))
			return d.hungUp(5000, false)
		}, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := newRig(t, testConfig(tc.mode))
			d.connected(0)
			r := tc.steps(d)
			assert.Equal(t, tc.want, d.rd.Acked)
			if tc.want > 0 {
				assert.Equal(t, tc.want, r.AckThrough, "the last step acknowledges")
			}
		})
	}
}

// isolate makes d isolate through seq 10 after a batch connection failed
// with seqs 1-10 read (5 was handled before: the witness).
func isolate(t *testing.T, d *rig) {
	t.Helper()
	d.restore(1, delivery.Strikes{})
	d.connected(0)
	d.writeRead(0, lines(1, 5, 100))
	d.writeRead(1, lines(6, 5, 100))
	r := d.hungUp(2, false)
	require.EqualValues(t, 5, d.rd.Acked)
	require.False(t, r.SaveStrikes, "a batch failure blames nobody")
	require.True(t, d.rd.Isolating)
}

// isolateUnread makes d isolate through seq n, nothing acknowledged: a
// batch of n written, then a hang-up with it unread.
func isolateUnread(t *testing.T, d *rig, n int) {
	t.Helper()
	d.connected(-100)
	d.wrote(-100, lines(1, n, 100), 0)
	r := d.hungUp(-99, true)
	require.False(t, r.SaveStrikes)
	require.Zero(t, d.rd.Acked)
	require.True(t, d.rd.Isolating)
}

func TestDeliveryBlame(t *testing.T) {
	t.Run("isolated, after the witness: a strike, then set aside", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		isolate(t, d)
		for attempt := 1; attempt <= 3; attempt++ {
			d.connected(10 * attempt)
			p, ok := d.next(0)
			require.True(t, ok)
			assert.Equal(t, delivery.Send{ResendWitness: 5}, p)
			d.writeRead(10*attempt, []delivery.Line{{Seq: 5, Size: 100}})
			p, ok = d.next(0)
			require.True(t, ok)
			assert.Equal(t, delivery.Send{From: 0, Max: 1}, p)
			d.writeRead(10*attempt, lines(6, 1, 100))
			r := d.hungUp(10*attempt+1, false)
			assert.Equal(t, attempt, d.rd.Strikes.N)
			assert.True(t, r.SaveStrikes)
			if attempt < 3 {
				assert.Zero(t, r.SetAside)
			} else {
				assert.EqualValues(t, 6, r.SetAside)
			}
		}
		d.setAside(6)
		assert.EqualValues(t, 6, d.rd.Acked)
		assert.Zero(t, d.rd.Strikes.N)
	})
	t.Run("not isolating: no strike, even on an event read alone after a handled one", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		d.restore(1, delivery.Strikes{})
		d.connected(0)
		d.writeRead(0, lines(1, 5, 100))
		d.writeRead(1, lines(6, 1, 100))
		require.False(t, d.rd.Isolating)
		r := d.hungUp(2, false)
		assert.EqualValues(t, 5, d.rd.Acked)
		assert.False(t, r.SaveStrikes, "blame needs an isolated event")
		assert.Zero(t, d.rd.Strikes.N)
		assert.True(t, d.rd.Isolating, "what was not shown handled goes alone now")
	})
	t.Run("first on the connection, no witness: no strike", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		isolateUnread(t, d, 3)
		d.connected(0)
		d.writeRead(0, lines(1, 1, 100))
		r := d.hungUp(1, false)
		assert.False(t, r.SaveStrikes)
		assert.Zero(t, d.rd.Strikes.N)
	})
	t.Run("handled, then read the next: the suspect is cleared", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		d.restore(6, delivery.Strikes{Seq: 6, N: 2, Witness: 5})
		require.True(t, d.rd.Isolating)
		d.connected(0)
		p, _ := d.next(0)
		assert.EqualValues(t, 5, p.ResendWitness, "the witness comes back from the spool")
		d.writeRead(0, []delivery.Line{{Seq: 5, Size: 100}})
		d.writeRead(1, lines(6, 1, 100))
		r := d.writeRead(2, lines(7, 1, 100))
		assert.EqualValues(t, 6, r.AckThrough)
		assert.True(t, r.SaveStrikes, "cleared")
		assert.Zero(t, d.rd.Strikes.N)
	})
	t.Run("closed with bytes unread: the event was not read alone", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		isolate(t, d)
		d.connected(10)
		d.writeRead(10, []delivery.Line{{Seq: 5, Size: 100}})
		d.wrote(11, lines(6, 1, 100), 0)
		r := d.hungUp(12, true)
		assert.False(t, r.SaveStrikes)
	})
	t.Run("max attempts 0 never sets aside", func(t *testing.T) {
		cfg := testConfig(delivery.LastRead)
		cfg.MaxAttempts = 0
		d := newRig(t, cfg)
		isolate(t, d)
		for attempt := 1; attempt <= 5; attempt++ {
			d.connected(10 * attempt)
			d.writeRead(10*attempt, []delivery.Line{{Seq: 5, Size: 100}})
			d.writeRead(10*attempt, lines(6, 1, 100))
			r := d.hungUp(10*attempt+1, false)
			assert.Zero(t, r.SetAside)
		}
		assert.Equal(t, 5, d.rd.Strikes.N)
	})
}

func TestDeliveryCrashLoop(t *testing.T) {
	d := newRig(t, testConfig(delivery.LastRead))
	d.restore(1, delivery.Strikes{})
	var pauses []time.Duration
	var early []bool // the path appearing 1 ms after the hang-up ends the pause
	var notes int
	for i := range 9 {
		ms := 1000 * i
		d.connected(ms)
		p, ok := d.next(0)
		require.True(t, ok)
		d.wrote(ms, lines(max(p.From, 1), 1, 100), 0)
		d.read(ms, 0)
		r := d.hungUp(ms, false) // died handling the first line it read
		assert.False(t, r.SaveStrikes, "no strike: it handled nothing")
		pauses = append(pauses, r.DialAt.Sub(at(ms)))
		early = append(early, d.step(delivery.Input{Kind: delivery.Appeared, Now: at(ms + 1)}).DialAt.Equal(at(ms+1)))
		for _, n := range r.Notes {
			if n.Kind == delivery.NoteCrashLoop {
				notes++
			}
		}
	}
	assert.Zero(t, d.rd.Acked)
	assert.Equal(t, 1, notes, "logged once")
	for i := 1; i < len(pauses); i++ {
		assert.GreaterOrEqual(t, pauses[i], pauses[i-1], "longer each time")
	}
	assert.Equal(t, 2560*time.Millisecond, pauses[8], "one backoff: 10 ms doubling, past MaxBackoff up to the crash loop's cap")
	assert.Equal(t, []bool{true, false, false, false, false, false, false, false, false}, early,
		"the socket path appearing ends only the first pause: a crash-looping receiver binds at each start")
	// One that stayed down pacedRestart (250 ms) is paced by its supervisor
	// already: its return ends the pause.
	assert.Equal(t, at(8250), d.step(delivery.Input{Kind: delivery.Appeared, Now: at(8250)}).DialAt)
	// Healthy again: it handles, and the pause is gone.
	d.connected(20000)
	d.writeRead(20000, lines(1, 1, 100))
	d.writeRead(20001, lines(2, 1, 100))
	d.hungUp(20002, false)
	assert.EqualValues(t, 1, d.rd.Acked)
	assert.Equal(t, at(20002), d.rd.DialAt)
}

func TestDeliveryStall(t *testing.T) {
	t.Run("frozen: read nothing, keeps the connection, writes nothing new", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		d.connected(0)
		d.wrote(0, lines(1, 50, 100), 0)
		for s := 1; s <= 100; s++ { // 100 s frozen
			r := d.read(1000*s, 5000) // a reading, then the clock
			r2 := d.tick(1000 * s)
			for _, r := range []delivery.Ready{r, r2} {
				assert.Equal(t, delivery.DropNone, r.Drop)
				assert.False(t, r.SaveStrikes)
			}
			notes := append(r.Notes, r2.Notes...)
			if s == 5 || s == 30 {
				require.Len(t, notes, 1)
				assert.Equal(t, map[int]delivery.NoteKind{5: delivery.NoteSlow, 30: delivery.NoteFrozen}[s], notes[0].Kind)
			} else {
				assert.Empty(t, notes, "noted once")
			}
		}
		_, ok := d.next(0)
		assert.False(t, ok, "nothing new while frozen")
		d.read(100001, 0) // thawed
		_, ok = d.next(0)
		assert.True(t, ok)
		assert.True(t, d.rd.Connected, "the same connection")
	})
	t.Run("frozen after reading part of it, at a line's end: no strike", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		d.connected(0)
		d.writeRead(0, lines(1, 10, 100))
		d.wrote(1, lines(11, 10, 100), 0)
		r := d.tick(31000)
		assert.Equal(t, delivery.DropNone, r.Drop)
		assert.Zero(t, d.rd.Strikes.N)
		assert.True(t, d.rd.Frozen)
	})
	t.Run("stopped inside a long line: strike, abandon", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		d.connected(0)
		d.writeRead(0, lines(1, 10, 100))
		d.wrote(1, lines(11, 1, 100<<10), 110<<10) // 3 kernel buffers
		d.read(2, 70<<10)                          // the first is read
		assert.Equal(t, delivery.DropNone, d.tick(4999).Drop)
		r := d.tick(5002)
		assert.Equal(t, delivery.DropStuck, r.Drop)
		assert.Equal(t, 1, d.rd.Strikes.N)
		assert.EqualValues(t, 11, d.rd.Strikes.Seq)
		assert.True(t, d.rd.Isolating)
		assert.False(t, d.rd.Connected)
	})
	t.Run("stopped inside a long line, then closed at a GC: strike on it, not on the line before", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		isolate(t, d)
		for attempt := 1; attempt <= 3; attempt++ {
			ms := 100 * attempt
			d.connected(ms)
			p, _ := d.next(0)
			require.Equal(t, delivery.Send{ResendWitness: d.rd.Acked}, p, "the witness alone first")
			d.writeRead(ms, []delivery.Line{{Seq: d.rd.Acked, Size: 100}})
			for seq := d.rd.Acked + 1; seq < 10; seq++ {
				p, ok := d.next(0)
				require.True(t, ok)
				require.Equal(t, 1, p.Max)
				d.writeRead(ms, lines(seq, 1, 100))
			}
			d.wrote(ms+1, lines(10, 1, 70<<10), 72<<10) // 2 kernel buffers
			r := d.read(ms+2, 34<<10)                   // the first is read: its scanner failed
			if attempt == 1 {
				assert.EqualValues(t, 9, r.AckThrough, "a read began after 9: handled")
			}
			require.EqualValues(t, 9, d.rd.Acked)
			r = d.hungUp(ms+50, true) // closed with the rest unread
			assert.Equal(t, attempt, d.rd.Strikes.N)
			assert.EqualValues(t, 10, d.rd.Strikes.Seq)
			if attempt == 3 {
				assert.EqualValues(t, 10, r.SetAside)
			}
		}
	})
	t.Run("closed inside a line it began in the same read as the one before: no strike", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		isolate(t, d)
		d.connected(10)
		d.writeRead(10, []delivery.Line{{Seq: 5, Size: 100}})
		d.wrote(11, lines(6, 1, 100), 0)
		d.wrote(11, lines(7, 1, 70<<10), 72<<10) // written before 6 was seen read
		d.read(12, 34<<10)
		r := d.hungUp(13, true)
		assert.False(t, r.SaveStrikes, "6 and the start of 7 may be one read: nothing proves 6 handled")
		assert.EqualValues(t, 5, d.rd.Acked)
	})
	t.Run("slow but reading: no stall", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.LastRead))
		d.connected(0)
		d.wrote(0, lines(1, 50, 100), 0)
		for s := 1; s <= 50; s++ {
			assert.Empty(t, d.read(20000*s, 5000-100*s).Notes)
			assert.Empty(t, d.tick(20000*s).Notes)
		}
	})
}

func TestDeliveryIsolationOverTCP(t *testing.T) {
	d := newRig(t, testConfig(delivery.KernelTook))
	isolateUnread(t, d, 3)
	d.connected(0)
	d.writeRead(0, lines(1, 1, 100))
	_, ok := d.next(0)
	require.False(t, ok, "paced")
	p, ok := d.next(int(tcpPace.Milliseconds()))
	require.True(t, ok, "the next isolated event goes once the kernel took this one, a pace later")
	assert.Equal(t, 1, p.Max)
	r := d.writeRead(10, lines(2, 1, 100<<10))
	assert.Zero(t, r.AckThrough, "an event its kernel took, 100 KiB after, proves nothing handled")
	assert.Zero(t, d.rd.Acked)
	d.tick(2010)
	assert.EqualValues(t, 2, d.rd.Acked, "linger does")
}

func TestDeliverySkipTo(t *testing.T) {
	d := newRig(t, testConfig(delivery.LastRead))
	d.restore(1, delivery.Strikes{Seq: 3, N: 2})
	require.Equal(t, 2, d.rd.Strikes.N)
	d.step(delivery.Input{Kind: delivery.First, Now: t0, Seq: 10})
	assert.EqualValues(t, 9, d.rd.Acked)
	assert.Zero(t, d.rd.Strikes.N)
}

func TestDeliveryWakeAt(t *testing.T) {
	d := newRig(t, testConfig(delivery.LastRead))
	r := d.tick(0)
	assert.False(t, r.Wakes, "not connected")
	d.connected(0)
	r = d.writeRead(0, lines(1, 2, 100))
	assert.True(t, r.Wakes)
	assert.Equal(t, at(2000), r.Wake, "linger")
	r = d.wrote(10, lines(3, 1, 100), 0)
	assert.Equal(t, at(5000), r.Wake, "slow, after the last read")
	r = d.tick(5000)
	assert.Equal(t, at(30000), r.Wake, "frozen")
	r = d.tick(30000)
	assert.False(t, r.Wakes, "frozen: nothing to wake for, the shell polls")
}

// How often the shell looks at a receiver with bytes unread is delivery's:
// after as long as it has been quiet (from 50 µs, doubling), then a tenth of
// the time since it last read or was written to (2 ms to 100 ms), every
// idleCheck once frozen, quickly again once it reads.
func TestDeliveryPollRate(t *testing.T) {
	d := newRig(t, testConfig(delivery.LastRead))
	d.connected(0)
	d.wrote(0, lines(1, 50, 100), 0)
	poll := func(ms, unread int) time.Duration {
		r := d.read(ms, unread)
		require.True(t, r.Reading)
		return r.Poll
	}
	assert.Equal(t, 50*time.Microsecond, poll(0, 5000), "just written: the shortest")
	assert.Equal(t, time.Millisecond, poll(1, 5000), "as long as the quiet")
	assert.Equal(t, 2*time.Millisecond, poll(3, 5000), "then at least quickLook")
	assert.Equal(t, 50*time.Millisecond, poll(500, 5000), "a tenth of the quiet")
	assert.Equal(t, idleCheck, poll(5000, 5000), "capped")
	assert.Equal(t, 50*time.Microsecond, poll(5001, 4000), "it read: quick again")
	assert.Equal(t, idleCheck, poll(40000, 4000), "frozen")
}

// MaxAge is delivery's: expired lines at the spool's head are expired, a
// batch is cut before an expired line further on, and expired lines behind
// unacknowledged ones wait for the head.
func TestDeliveryAged(t *testing.T) {
	cfg := testConfig(delivery.LastRead)
	cfg.MaxAge = time.Minute
	old, young := 2*time.Minute, time.Second
	aged := func(head uint64, ages ...time.Duration) (int, int) {
		d := newRig(t, cfg)
		d.restore(head, delivery.Strikes{})
		return d.d.Aged(10, ages)
	}
	keep, expire := aged(10, old, old, young, young)
	assert.Equal(t, 0, keep)
	assert.Equal(t, 2, expire, "the expired head: 10 and 11")
	keep, expire = aged(10, young, young, old, young)
	assert.Equal(t, 2, keep, "cut before the expired line")
	assert.Zero(t, expire)
	keep, expire = aged(9, old, old, young, young)
	assert.Equal(t, 0, keep, "behind 9, unacknowledged: wait")
	assert.Zero(t, expire)
	keep, expire = aged(10, young, young, young, young)
	assert.Equal(t, 4, keep)
	assert.Zero(t, expire)
	cfg.MaxAge = 0
	keep, expire = aged(10, old, old, old, old)
	assert.Equal(t, 4, keep, "no MaxAge: nothing expires")
	assert.Zero(t, expire)
}

// MaxHold is delivery's: a hold shorter than it is looked at again when it
// would reach it; one that reached it is released; without it, never.
func TestDeliveryMaxHold(t *testing.T) {
	cfg := testConfig(delivery.LastRead)
	cfg.MaxHold = 10 * time.Minute
	d := newRig(t, cfg)
	release, left := d.d.Hold(4 * time.Minute)
	assert.False(t, release)
	assert.Equal(t, 6*time.Minute, left)
	release, left = d.d.Hold(10 * time.Minute)
	assert.True(t, release)
	assert.Zero(t, left)
	cfg.MaxHold = 0
	d = newRig(t, cfg)
	release, left = d.d.Hold(24 * time.Hour)
	assert.False(t, release)
	assert.Zero(t, left, "no limit")
}

// TestDeliveryReleased: a connection the caller releases idle (ReleaseIdle)
// is no failure: however many in a row carried nothing, the next dial is
// at once, nothing is noted as a crash loop and nothing struck.
func TestDeliveryReleased(t *testing.T) {
	d := newRig(t, testConfig(delivery.LastRead))
	d.restore(1, delivery.Strikes{})
	for i := range 5 {
		ms := 1000 * i
		d.connected(ms)
		r := d.step(delivery.Input{Kind: delivery.Released, Now: at(ms + 500)})
		assert.Equal(t, at(ms+500), r.DialAt, "dial at once when there is work")
		assert.False(t, r.Connected)
		assert.False(t, r.SaveStrikes)
		assert.Empty(t, r.Notes)
	}
	// A connection that handled lines, then released: they stay acknowledged.
	d.connected(10000)
	d.writeRead(10000, lines(1, 1, 100))
	d.writeRead(10001, lines(2, 1, 100))
	r := d.step(delivery.Input{Kind: delivery.Released, Now: at(10002)})
	assert.EqualValues(t, 1, r.Acked, "the line a later read proved handled")
	assert.Equal(t, at(10002), r.DialAt)
}
