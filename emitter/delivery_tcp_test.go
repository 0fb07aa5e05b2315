package emitter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tcpFailed makes d (over TCP) isolate through seq 20 after a batch
// connection whose receiver died with events 1-20 taken by its kernel.
func tcpFailed(t *testing.T) *delivery {
	t.Helper()
	d := newDelivery(testConfig(kernelTook))
	d.restore(1, strikeRecord{})
	d.connected(at(0))
	r := writeRead(d, 0, lines(1, 20, 100))
	require.Zero(t, r.ackThrough, "taken by its kernel: nothing handled")
	r = d.hungUp(at(10), true)
	require.False(t, r.saveStrike)
	require.True(t, d.isolating())
	return d
}

// sendAlone writes the event next asks for at ms (the witness too), taken by
// the receiver's kernel, and returns its sequence; ok false: held.
func sendAlone(t *testing.T, d *delivery, ms int) (uint64, bool) {
	t.Helper()
	p, ok := d.next(at(ms))
	if !ok {
		return 0, false
	}
	seq := p.resendWitness
	if seq == 0 {
		require.Equal(t, 1, p.max, "one at a time")
		seq = max(p.from, d.acked+1)
	}
	writeRead(d, ms, lines(seq, 1, 100))
	return seq, true
}

func TestDeliveryTCPPoison(t *testing.T) {
	d := tcpFailed(t)
	// Searching: paced, and the FIN after 5 names it.
	d.connected(at(100))
	ms := 100
	for want := uint64(1); want <= 5; want++ {
		_, ok := d.next(at(ms + int(tcpPace.Milliseconds()) - 1))
		if want > 1 {
			assert.False(t, ok, "paced")
		}
		ms += int(tcpPace.Milliseconds())
		seq, ok := sendAlone(t, d, ms)
		require.True(t, ok)
		require.Equal(t, want, seq)
	}
	require.True(t, d.wantsFin())
	require.True(t, d.peerFin(at(ms+1), 0), "it took events: a FIN ends the connection")
	r := d.hungUp(at(ms+1), true)
	assert.False(t, r.saveStrike, "nothing before 5 was shown handled")
	require.EqualValues(t, 5, d.tcp.stopAt, "the suspect")

	// Three connections, each dying on 5 written alone after everything
	// before it lingered.
	for attempt := 1; attempt <= 3; attempt++ {
		start := 1000 * attempt * 10
		d.connected(at(start))
		for {
			seq, ok := sendAlone(t, d, start)
			require.True(t, ok, "unpaced before the suspect")
			if seq == 4 {
				break
			}
		}
		_, ok := d.next(at(start + 1999))
		assert.False(t, ok, "the suspect waits until everything before it lingered")
		wake, _ := d.wakeAt()
		assert.Equal(t, at(start+2000), wake)
		d.tick(at(start + 2000))
		require.EqualValues(t, 4, d.acked, "lingered: handled")
		seq, ok := sendAlone(t, d, start+2000)
		require.True(t, ok)
		require.EqualValues(t, 5, seq)
		_, ok = d.next(at(start + 3000))
		assert.False(t, ok, "nothing follows the suspect until it lingers")
		require.True(t, d.peerFin(at(start+2001), 0))
		r := d.hungUp(at(start+2001), true)
		assert.Equal(t, attempt, d.strikes.n)
		if attempt == 3 {
			require.EqualValues(t, 5, r.setAside)
		}
	}
	d.setAsideDone(5)
	assert.False(t, d.isolating(), "the receiver handled nothing after it: no more isolation")
	d.connected(at(50000))
	p, ok := d.next(at(50000))
	require.True(t, ok)
	assert.Equal(t, 100, p.max, "a batch")
}

func TestDeliveryTCPNoEvidence(t *testing.T) {
	t.Run("died with events unread: no suspect, slower", func(t *testing.T) {
		d := tcpFailed(t)
		d.connected(at(100))
		sendAlone(t, d, 100)
		sendAlone(t, d, 110)
		r := d.hungUp(at(115), true) // a reset, no FIN
		assert.False(t, r.saveStrike)
		assert.Zero(t, d.tcp.stopAt)
		assert.Equal(t, 2*tcpPace, d.pace())
	})
	t.Run("a FIN before any event was taken: a receive-only peer", func(t *testing.T) {
		d := tcpFailed(t)
		d.connected(at(100))
		assert.False(t, d.peerFin(at(100), 0))
		assert.False(t, d.wantsFin(), "ignored for this connection")
		sendAlone(t, d, 100)
		assert.NotNil(t, d.conn)
	})
	t.Run("dies on the witness, over and over (a crash loop): no strike", func(t *testing.T) {
		d := newDelivery(testConfig(kernelTook))
		d.restore(6, strikeRecord{seq: 6, n: 2, witness: 5})
		require.EqualValues(t, 6, d.tcp.stopAt)
		for attempt := 0; attempt < 5; attempt++ {
			start := 10000 * attempt
			d.connected(at(start))
			seq, ok := sendAlone(t, d, start)
			require.True(t, ok)
			require.EqualValues(t, 5, seq, "the witness first")
			assert.False(t, d.peerFin(at(start+1), 0), "only the witness taken")
			_, ok = d.next(at(start + 1000))
			assert.False(t, ok, "the suspect waits for the witness to linger")
			r := d.hungUp(at(start+1000), true)
			assert.False(t, r.saveStrike)
			assert.Zero(t, r.setAside)
		}
		assert.Equal(t, 2, d.strikes.n, "no new strike")
	})
	t.Run("died before the suspect was reached: search again, slower", func(t *testing.T) {
		d := tcpFailed(t)
		d.tcp.stopAt = 5
		d.connected(at(100))
		sendAlone(t, d, 100)
		sendAlone(t, d, 100)
		require.True(t, d.peerFin(at(101), 0))
		r := d.hungUp(at(101), true)
		assert.False(t, r.saveStrike)
		assert.Zero(t, d.tcp.stopAt)
		assert.Equal(t, 2*tcpPace, d.pace())
	})
	t.Run("the suspect lingered: handled, the search goes on", func(t *testing.T) {
		d := tcpFailed(t)
		d.tcp.stopAt = 1
		d.connected(at(100))
		sendAlone(t, d, 100) // first on the connection, no witness: not evidence
		d.tick(at(2100))
		assert.EqualValues(t, 1, d.acked)
		assert.Zero(t, d.tcp.stopAt)
		_, ok := sendAlone(t, d, 2100)
		assert.True(t, ok)
	})
}
