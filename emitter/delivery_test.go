package emitter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests step delivery alone: no socket, no sleep, time is a number.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func testConfig(mode windowMode) deliveryConfig {
	return deliveryConfig{mode: mode, windowBytes: 300, linger: 2 * time.Second, stallAfter: 30 * time.Second,
		warnAfter: 5 * time.Second, stuckAfter: 5 * time.Second,
		maxAttempts: 3, batch: 100, backoff: 10 * time.Millisecond, maxBackoff: 100 * time.Millisecond, crashPause: 5 * time.Second}
}

// lines returns n lines of size bytes from seq from.
func lines(from uint64, n, size int) []line {
	out := make([]line, n)
	for i := range out {
		out[i] = line{seq: from + uint64(i), size: size}
	}
	return out
}

// writeRead writes ls in one write and has the receiver read all of it.
func writeRead(d *delivery, ms int, ls []line) ready {
	d.wrote(at(ms), ls, 0)
	return d.observed(at(ms), 0)
}

func TestDeliveryWindow(t *testing.T) {
	tests := map[string]struct {
		mode  windowMode
		steps func(d *delivery) ready
		want  uint64 // acknowledged through
	}{
		"last read: one read holds all": {lastRead, func(d *delivery) ready {
			return writeRead(d, 0, lines(1, 40, 100))
		}, 0},
		"last read: a later read proves the earlier handled": {lastRead, func(d *delivery) ready {
			writeRead(d, 0, lines(1, 40, 100))
			return writeRead(d, 1, lines(41, 1, 100))
		}, 40},
		"last read: a write read in part is not read": {lastRead, func(d *delivery) ready {
			writeRead(d, 0, lines(1, 3, 100))
			d.wrote(at(1), lines(4, 3, 100), 0)
			d.wrote(at(1), lines(7, 3, 100), 0)
			return d.observed(at(1), 300) // the last write's bytes are held
		}, 3},
		"last read: socket memory above the payload errs towards unread": {lastRead, func(d *delivery) ready {
			writeRead(d, 0, lines(1, 2, 100))
			d.wrote(at(1), lines(3, 1, 100), 0)
			d.wrote(at(1), lines(4, 1, 100), 0)
			return d.observed(at(1), 150) // more than the newest write's payload
		}, 0},
		"last read: measured memory maps exactly": {lastRead, func(d *delivery) ready {
			writeRead(d, 0, lines(1, 2, 100))
			d.wrote(at(1), lines(3, 1, 100), 900)
			d.wrote(at(1), lines(4, 1, 100), 900)
			return d.observed(at(1), 900)
		}, 2},
		"linger: read 2 s ago, still connected": {lastRead, func(d *delivery) ready {
			writeRead(d, 0, lines(1, 5, 100))
			return d.tick(at(2000))
		}, 5},
		"linger: not yet": {lastRead, func(d *delivery) ready {
			writeRead(d, 0, lines(1, 5, 100))
			return d.tick(at(1999))
		}, 0},
		"fixed: 300 bytes after it": {fixedBytes, func(d *delivery) ready {
			return writeRead(d, 0, lines(1, 10, 100))
		}, 7},
		"none: read is handled": {noWindow, func(d *delivery) ready {
			return writeRead(d, 0, lines(1, 10, 100))
		}, 10},
		"hang-up forgets linger": {lastRead, func(d *delivery) ready {
			writeRead(d, 0, lines(1, 5, 100))
			return d.hungUp(at(5000), false)
		}, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := newDelivery(testConfig(tc.mode))
			d.connected(at(0))
			r := tc.steps(d)
			assert.Equal(t, tc.want, d.acked)
			if tc.want > 0 {
				assert.Equal(t, tc.want, r.ackThrough, "the last step acknowledges")
			}
		})
	}
}

// isolate makes d isolate through seq 10 after a batch connection failed
// with seqs 1-10 read (5 was handled before: the witness).
func isolate(t *testing.T, d *delivery) {
	t.Helper()
	d.restore(1, strikeRecord{})
	d.connected(at(0))
	writeRead(d, 0, lines(1, 5, 100))
	writeRead(d, 1, lines(6, 5, 100))
	r := d.hungUp(at(2), false)
	require.EqualValues(t, 5, d.acked)
	require.False(t, r.saveStrike, "a batch failure blames nobody")
	require.True(t, d.isolating())
}

func TestDeliveryBlame(t *testing.T) {
	t.Run("isolated, after the witness: a strike, then set aside", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		isolate(t, d)
		for attempt := 1; attempt <= 3; attempt++ {
			d.connected(at(10 * attempt))
			p, ok := d.next(at(0))
			require.True(t, ok)
			assert.Equal(t, sendPlan{resendWitness: 5}, p)
			writeRead(d, 10*attempt, []line{{seq: 5, size: 100}})
			p, ok = d.next(at(0))
			require.True(t, ok)
			assert.Equal(t, sendPlan{from: 0, max: 1}, p)
			writeRead(d, 10*attempt, lines(6, 1, 100))
			r := d.hungUp(at(10*attempt+1), false)
			assert.Equal(t, attempt, d.strikes.n)
			assert.True(t, r.saveStrike)
			if attempt < 3 {
				assert.Zero(t, r.setAside)
			} else {
				assert.EqualValues(t, 6, r.setAside)
			}
		}
		d.setAsideDone(6)
		assert.EqualValues(t, 6, d.acked)
		assert.Zero(t, d.strikes.n)
	})
	t.Run("first on the connection, no witness: no strike", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		d.isolateTo = 3
		d.connected(at(0))
		writeRead(d, 0, lines(1, 1, 100))
		r := d.hungUp(at(1), false)
		assert.False(t, r.saveStrike)
		assert.Zero(t, d.strikes.n)
	})
	t.Run("handled, then read the next: the suspect is cleared", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		d.restore(6, strikeRecord{seq: 6, n: 2, witness: 5})
		require.True(t, d.isolating())
		d.connected(at(0))
		p, _ := d.next(at(0))
		assert.EqualValues(t, 5, p.resendWitness, "the witness comes back from the spool")
		writeRead(d, 0, []line{{seq: 5, size: 100}})
		writeRead(d, 1, lines(6, 1, 100))
		r := writeRead(d, 2, lines(7, 1, 100))
		assert.EqualValues(t, 6, r.ackThrough)
		assert.True(t, r.saveStrike, "cleared")
		assert.Zero(t, d.strikes.n)
	})
	t.Run("closed with bytes unread: the event was not read alone", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		isolate(t, d)
		d.connected(at(10))
		writeRead(d, 10, []line{{seq: 5, size: 100}})
		d.wrote(at(11), lines(6, 1, 100), 0)
		r := d.hungUp(at(12), true)
		assert.False(t, r.saveStrike)
	})
	t.Run("max attempts 0 never sets aside", func(t *testing.T) {
		cfg := testConfig(lastRead)
		cfg.maxAttempts = 0
		d := newDelivery(cfg)
		isolate(t, d)
		for attempt := 1; attempt <= 5; attempt++ {
			d.connected(at(10 * attempt))
			writeRead(d, 10*attempt, []line{{seq: 5, size: 100}})
			writeRead(d, 10*attempt, lines(6, 1, 100))
			r := d.hungUp(at(10*attempt+1), false)
			assert.Zero(t, r.setAside)
		}
		assert.Equal(t, 5, d.strikes.n)
	})
}

func TestDeliveryCrashLoop(t *testing.T) {
	d := newDelivery(testConfig(lastRead))
	d.restore(1, strikeRecord{})
	var pauses []time.Duration
	var early []bool
	var notes int
	for i := range 9 {
		now := at(1000 * i)
		d.connected(now)
		p, ok := d.next(at(0))
		require.True(t, ok)
		d.wrote(now, lines(max(p.from, 1), 1, 100), 0)
		d.observed(now, 0)
		r := d.hungUp(now, false) // died handling the first line it read
		assert.False(t, r.saveStrike, "no strike: it handled nothing")
		v := d.view(now)
		pauses, early = append(pauses, v.dialAt.Sub(now)), append(early, v.early)
		for _, n := range r.notes {
			if n.kind == noteCrashLoop {
				notes++
			}
		}
	}
	assert.Zero(t, d.acked)
	assert.Equal(t, 1, notes, "logged once")
	for i := 1; i < len(pauses); i++ {
		assert.GreaterOrEqual(t, pauses[i], pauses[i-1], "longer each time")
	}
	assert.Equal(t, 2560*time.Millisecond, pauses[8], "one backoff: 10 ms doubling, past MaxBackoff up to the crash loop's cap")
	assert.Equal(t, []bool{true, false, false, false, false, false, false, false, false}, early,
		"the socket path appearing ends only the first pause: a crash-looping receiver binds at each start")
	// Healthy again: it handles, and the pause is gone.
	d.connected(at(20000))
	writeRead(d, 20000, lines(1, 1, 100))
	writeRead(d, 20001, lines(2, 1, 100))
	d.hungUp(at(20002), false)
	assert.EqualValues(t, 1, d.acked)
	assert.Equal(t, at(20002), d.view(at(20002)).dialAt)
}

func TestDeliveryStall(t *testing.T) {
	t.Run("frozen: read nothing, keeps the connection, writes nothing new", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		d.connected(at(0))
		d.wrote(at(0), lines(1, 50, 100), 0)
		var r ready
		for s := 1; s <= 100; s++ { // 100 s frozen
			r = d.observed(at(1000*s), 5000)
			r2 := d.tick(at(1000 * s))
			assert.False(t, r2.abandon)
			assert.False(t, r2.saveStrike)
			r.notes = append(r.notes, r2.notes...)
			if s == 5 || s == 30 {
				require.Len(t, r2.notes, 1)
				assert.Equal(t, map[int]noteKind{5: noteSlow, 30: noteFrozen}[s], r2.notes[0].kind)
			} else {
				assert.Empty(t, r2.notes, "noted once")
			}
		}
		_, ok := d.next(at(0))
		assert.False(t, ok, "nothing new while frozen")
		r = d.observed(at(100001), 0) // thawed
		_, ok = d.next(at(0))
		assert.True(t, ok)
		assert.NotNil(t, d.conn, "the same connection")
	})
	t.Run("frozen after reading part of it, at a line's end: no strike", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		d.connected(at(0))
		writeRead(d, 0, lines(1, 10, 100))
		d.wrote(at(1), lines(11, 10, 100), 0)
		r := d.tick(at(31000))
		assert.False(t, r.abandon)
		assert.Zero(t, d.strikes.n)
		assert.True(t, d.conn.frozen)
	})
	t.Run("stopped inside a long line: strike, abandon", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		d.connected(at(0))
		writeRead(d, 0, lines(1, 10, 100))
		d.wrote(at(1), lines(11, 1, 100<<10), 110<<10) // 3 kernel buffers
		d.observed(at(2), 70<<10)                      // the first is read
		assert.False(t, d.tick(at(4999)).abandon)
		r := d.tick(at(5002))
		assert.True(t, r.abandon)
		assert.Equal(t, 1, d.strikes.n)
		assert.EqualValues(t, 11, d.strikes.seq)
		assert.True(t, d.isolating())
		assert.Nil(t, d.conn)
	})
	t.Run("stopped inside a long line, then closed at a GC: strike on it, not on the line before", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		isolate(t, d)
		for attempt := 1; attempt <= 3; attempt++ {
			ms := 100 * attempt
			d.connected(at(ms))
			p, _ := d.next(at(0))
			require.Equal(t, sendPlan{resendWitness: d.acked}, p, "the witness alone first")
			writeRead(d, ms, []line{{seq: d.acked, size: 100}})
			for seq := d.acked + 1; seq < 10; seq++ {
				p, ok := d.next(at(0))
				require.True(t, ok)
				require.Equal(t, 1, p.max)
				writeRead(d, ms, lines(seq, 1, 100))
			}
			d.wrote(at(ms+1), lines(10, 1, 70<<10), 72<<10) // 2 kernel buffers
			r := d.observed(at(ms+2), 34<<10)               // the first is read: its scanner failed
			if attempt == 1 {
				assert.EqualValues(t, 9, r.ackThrough, "a read began after 9: handled")
			}
			require.EqualValues(t, 9, d.acked)
			r = d.hungUp(at(ms+50), true) // closed with the rest unread
			assert.Equal(t, attempt, d.strikes.n)
			assert.EqualValues(t, 10, d.strikes.seq)
			if attempt == 3 {
				assert.EqualValues(t, 10, r.setAside)
			}
		}
	})
	t.Run("closed inside a line it began in the same read as the one before: no strike", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		isolate(t, d)
		d.connected(at(10))
		writeRead(d, 10, []line{{seq: 5, size: 100}})
		d.wrote(at(11), lines(6, 1, 100), 0)
		d.wrote(at(11), lines(7, 1, 70<<10), 72<<10) // written before 6 was seen read
		d.observed(at(12), 34<<10)
		r := d.hungUp(at(13), true)
		assert.False(t, r.saveStrike, "6 and the start of 7 may be one read: nothing proves 6 handled")
		assert.EqualValues(t, 5, d.acked)
	})
	t.Run("slow but reading: no stall", func(t *testing.T) {
		d := newDelivery(testConfig(lastRead))
		d.connected(at(0))
		d.wrote(at(0), lines(1, 50, 100), 0)
		for s := 1; s <= 50; s++ {
			d.observed(at(20000*s), 5000-100*s)
			assert.Empty(t, d.tick(at(20000*s)).notes)
		}
	})
}

func TestDeliveryIsolationOverTCP(t *testing.T) {
	d := newDelivery(testConfig(kernelTook))
	d.isolateTo = 3
	d.connected(at(0))
	writeRead(d, 0, lines(1, 1, 100))
	_, ok := d.next(at(0))
	require.False(t, ok, "paced")
	p, ok := d.next(at(int(tcpPace.Milliseconds())))
	require.True(t, ok, "the next isolated event goes once the kernel took this one, a pace later")
	assert.Equal(t, 1, p.max)
	r := writeRead(d, 10, lines(2, 1, 100<<10))
	assert.Zero(t, r.ackThrough, "an event its kernel took, 100 KiB after, proves nothing handled")
	assert.Zero(t, d.acked)
	d.tick(at(2010))
	assert.EqualValues(t, 2, d.acked, "linger does")
}

func TestDeliveryConfigOf(t *testing.T) {
	tests := map[string]struct {
		opts Options
		mode windowMode
	}{
		"unix":                 {Options{Network: "unix"}, lastRead},
		"unix, a size":         {Options{Network: "unix", ReplayWindow: 4096}, fixedBytes},
		"tcp: linger only":     {Options{Network: "tcp"}, kernelTook},
		"tcp, a size is taken": {Options{Network: "tcp", ReplayWindow: 4096}, fixedBytes},
		"tcp, no window":       {Options{Network: "tcp", ReplayWindow: -1}, noWindow},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.mode, deliveryConfigOf(&tc.opts).mode)
		})
	}
}

func TestDeliverySkipTo(t *testing.T) {
	d := newDelivery(testConfig(lastRead))
	d.restore(1, strikeRecord{})
	d.strikes = strikeRecord{seq: 3, n: 2}
	d.skipTo(10)
	assert.EqualValues(t, 9, d.acked)
	assert.Zero(t, d.strikes.n)
}

func TestDeliveryWakeAt(t *testing.T) {
	d := newDelivery(testConfig(lastRead))
	_, ok := d.wakeAt()
	assert.False(t, ok, "not connected")
	d.connected(at(0))
	writeRead(d, 0, lines(1, 2, 100))
	w, ok := d.wakeAt()
	assert.True(t, ok)
	assert.Equal(t, at(2000), w, "linger")
	d.wrote(at(10), lines(3, 1, 100), 0)
	w, _ = d.wakeAt()
	assert.Equal(t, at(5000), w, "slow, after the last read")
	d.tick(at(5000))
	w, _ = d.wakeAt()
	assert.Equal(t, at(30000), w, "frozen")
	d.tick(at(30000))
	_, ok = d.wakeAt()
	assert.False(t, ok, "frozen: nothing to wake for, the shell polls")
}

// How often the shell looks at a receiver with bytes unread is delivery's: a
// tenth of the time since it last read or was written to (2 ms to 100 ms),
// every idleCheck once frozen, quickly again once it reads.
func TestDeliveryPollRate(t *testing.T) {
	d := newDelivery(testConfig(lastRead))
	d.connected(at(0))
	d.wrote(at(0), lines(1, 50, 100), 0)
	poll := func(ms, unread int) time.Duration {
		r := d.step(msg{kind: msgRead, now: at(ms), n: unread})
		require.True(t, r.view.reading)
		return r.view.poll
	}
	assert.Equal(t, 2*time.Millisecond, poll(1, 5000), "just written: the shortest")
	assert.Equal(t, 50*time.Millisecond, poll(500, 5000), "a tenth of the quiet")
	assert.Equal(t, idleCheck, poll(5000, 5000), "capped")
	assert.Equal(t, 2*time.Millisecond, poll(5001, 4000), "it read: quick again")
	assert.Equal(t, idleCheck, poll(40000, 4000), "frozen")
}

// MaxAge is delivery's: expired lines at the spool's head are expired, a
// batch is cut before an expired line further on, and expired lines behind
// unacknowledged ones wait for the head.
func TestDeliveryAged(t *testing.T) {
	cfg := testConfig(lastRead)
	cfg.maxAge = time.Minute
	d := newDelivery(cfg)
	old, young := 2*time.Minute, time.Second
	aged := func(head uint64, ages ...time.Duration) (int, int) {
		d.acked = head - 1
		r := d.step(msg{kind: msgBatch, seq: 10, ages: ages})
		return r.keep, r.expire
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
	d.cfg.maxAge = 0
	keep, expire = aged(10, old, old, old, old)
	assert.Equal(t, 4, keep, "no MaxAge: nothing expires")
	assert.Zero(t, expire)
}

// MaxHold is delivery's: a hold shorter than it is looked at again when it
// would reach it; one that reached it is released; without it, never.
func TestDeliveryMaxHold(t *testing.T) {
	cfg := testConfig(lastRead)
	cfg.maxHold = 10 * time.Minute
	d := newDelivery(cfg)
	r := d.step(msg{kind: msgHeld, held: 4 * time.Minute})
	assert.False(t, r.release)
	assert.Equal(t, 6*time.Minute, r.holdLeft)
	r = d.step(msg{kind: msgHeld, held: 10 * time.Minute})
	assert.True(t, r.release)
	d.cfg.maxHold = 0
	r = d.step(msg{kind: msgHeld, held: 24 * time.Hour})
	assert.False(t, r.release)
	assert.Zero(t, r.holdLeft, "no limit")
}
