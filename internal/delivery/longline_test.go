package delivery_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/delivery"
)

// longLine is a line over cloud-event-proxy's 64 KiB: a receiver reads
// into it, fails there and may close at once, the rest unread.
const longLine = 70001

// An isolated event read alone, then a hang-up: what was written after it
// decides whom the hang-up blames. Bytes of a short line left unread were
// never begun: the event read alone did it. A long line left unread may
// have been read into and failed on: ambiguous, nobody is blamed.
func TestDeliveryBlameReadAlone(t *testing.T) {
	tests := map[string]struct {
		after  int  // the size of the line written after 6; 0: none
		reset  bool // the hang-up left bytes unread
		strike uint64
	}{
		"nothing after it":                        {0, false, 6},
		"a short line after it, unread":           {100, true, 6},
		"a long line after it, unread":            {longLine, true, 0},
		"a long line after it, all read":          {longLine, false, 7},
		"a line of 4 KiB after it, unread":        {4 << 10, true, 6},
		"a line just over 4 KiB after it, unread": {4<<10 + 1, true, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			d := newRig(t, testConfig(delivery.LastRead))
			isolate(t, d)
			connectedThrough6(d, 10)
			if tc.after > 0 {
				p, ok := d.next(12)
				require.True(t, ok)
				require.Equal(t, 1, p.Max)
				d.wrote(12, lines(7, 1, tc.after), 0)
			}
			d.hungUp(13, tc.reset)
			assert.Equal(t, tc.strike, d.rd.Strikes.Seq)
			if tc.strike == 0 {
				assert.Zero(t, d.rd.Strikes.N)
				assert.EqualValues(t, 7, d.rd.Suspect, "the long line goes alone next time, after 6 is handled")
			}
		})
	}
}

// After that ambiguous hang-up the next connections tell the two apart:
// the long line goes alone only once the event before it lingered, handled,
// and nothing follows it; a receiver that then closes with it unread has
// failed on it.
func TestDeliveryBlameLongLineClosedAtOnce(t *testing.T) {
	ambiguous := func(t *testing.T, maxAttempts int) *rig {
		cfg := testConfig(delivery.LastRead)
		cfg.MaxAttempts = maxAttempts
		d := newRig(t, cfg)
		isolate(t, d)
		connectedThrough6(d, 10)
		d.wrote(12, lines(7, 1, longLine), 0)
		r := d.hungUp(13, true)
		require.Zero(t, d.rd.Strikes.N)
		require.False(t, r.SaveStrikes)
		return d
	}
	t.Run("the long line is set aside, the event before it never", func(t *testing.T) {
		d := ambiguous(t, 3)
		ms := 1000
		for attempt := 1; attempt <= 3; attempt++ {
			d.connected(ms)
			p, ok := d.next(ms)
			require.True(t, ok)
			if attempt == 1 {
				assert.Equal(t, delivery.Send{ResendWitness: 5}, p)
				d.writeRead(ms, []delivery.Line{{Seq: 5, Size: 100}})
				p, ok = d.next(ms)
				require.True(t, ok)
				require.Equal(t, delivery.Send{Max: 1}, p)
				d.writeRead(ms+1, lines(6, 1, 100))
			} else {
				assert.Equal(t, delivery.Send{ResendWitness: 6}, p, "6 handled: the witness now")
				d.writeRead(ms, []delivery.Line{{Seq: 6, Size: 100}})
			}
			_, ok = d.next(ms + 1)
			require.False(t, ok, "held: the long line waits until what is before it is handled")
			require.True(t, d.rd.Wakes)
			d.tick(ms + 2001)
			require.EqualValues(t, 6, d.rd.Acked, "handled: read 2 s ago, still connected")
			p, ok = d.next(ms + 2001)
			require.True(t, ok)
			require.Equal(t, 1, p.Max)
			d.wrote(ms+2001, lines(7, 1, longLine), 0)
			r := d.hungUp(ms+2002, true) // read into it and closed
			assert.EqualValues(t, 7, d.rd.Strikes.Seq, "attempt %d", attempt)
			assert.Equal(t, attempt, d.rd.Strikes.N)
			assert.True(t, r.SaveStrikes)
			if attempt < 3 {
				assert.Zero(t, r.SetAside)
			} else {
				assert.EqualValues(t, 7, r.SetAside)
			}
			ms += 10000
		}
	})
	t.Run("max attempts 1: the long line at the first clean try", func(t *testing.T) {
		d := ambiguous(t, 1)
		connectedThrough6(d, 1000)
		d.tick(3001)
		d.wrote(3001, lines(7, 1, longLine), 0)
		r := d.hungUp(3002, true)
		assert.EqualValues(t, 7, r.SetAside)
	})
	t.Run("it dies on the event before, nothing after it written: that one's strike", func(t *testing.T) {
		d := ambiguous(t, 3)
		connectedThrough6(d, 1000)
		_, ok := d.next(1002)
		require.False(t, ok, "held")
		d.hungUp(1003, false)
		assert.EqualValues(t, 6, d.rd.Strikes.Seq)
		assert.Equal(t, 1, d.rd.Strikes.N)
	})
	t.Run("it handles the long line: the hold ends", func(t *testing.T) {
		d := ambiguous(t, 3)
		connectedThrough6(d, 1000)
		d.tick(3001)
		d.writeRead(3001, lines(7, 1, longLine))
		_, ok := d.next(3002)
		require.False(t, ok, "nothing follows it until it is handled")
		d.tick(5001)
		assert.EqualValues(t, 7, d.rd.Acked)
		assert.Zero(t, d.rd.Suspect)
		p, ok := d.next(5001)
		require.True(t, ok)
		assert.Equal(t, 1, p.Max, "still isolating through 10")
	})
	t.Run("a receiver frozen before it closes is not blamed", func(t *testing.T) {
		d := ambiguous(t, 1)
		connectedThrough6(d, 1000)
		d.tick(3001)
		d.wrote(3001, lines(7, 1, longLine), 0)
		d.read(3001, longLine)
		d.tick(40000)
		require.True(t, d.rd.Frozen)
		r := d.hungUp(40001, true)
		assert.Zero(t, r.SetAside)
		assert.Zero(t, d.rd.Strikes.N)
	})
}

// Over TCP a read is the peer's kernel's, whatever the window mode: with
// --replay-window SIZE a hang-up after an event read alone is no evidence
// that the receiver died on it.
func TestDeliveryBlameNeedsReads(t *testing.T) {
	cfg := testConfig(delivery.FixedBytes)
	cfg.WindowBytes = 200
	d := newRig(t, cfg)
	tcp := func(ms int) { d.step(delivery.Input{Kind: delivery.Connected, Now: at(ms), Reads: false}) }
	d.restore(1, delivery.Strikes{})
	tcp(0)
	d.writeRead(0, lines(1, 10, 100))
	d.hungUp(1, false)
	require.True(t, d.rd.Isolating)
	tcp(10)
	for ms := 10; ; ms++ {
		p, ok := d.next(ms)
		require.True(t, ok)
		if p.ResendWitness != 0 {
			d.writeRead(ms, []delivery.Line{{Seq: p.ResendWitness, Size: 100}})
			continue
		}
		d.writeRead(ms, lines(d.rd.Acked+1, 1, 100)) // read alone
		break
	}
	d.hungUp(100, false)
	assert.Zero(t, d.rd.Strikes.N, "no strike on a kernel's reads")
}

// connectedThrough6 connects d at ms, resends the witness 5 and writes 6
// alone, each read whole.
func connectedThrough6(d *rig, ms int) {
	d.connected(ms)
	d.writeRead(ms, []delivery.Line{{Seq: 5, Size: 100}})
	d.writeRead(ms+1, lines(6, 1, 100))
}
