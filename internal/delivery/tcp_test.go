package delivery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/delivery"
)

// tcpFailed makes d (over TCP) isolate through seq 20 after a batch
// connection whose receiver died with events 1-20 taken by its kernel.
func tcpFailed(t *testing.T) *rig {
	t.Helper()
	d := newRig(t, testConfig(delivery.KernelTook))
	d.restore(1, delivery.Strikes{})
	d.connected(0)
	r := d.writeRead(0, lines(1, 20, 100))
	require.Zero(t, r.AckThrough, "taken by its kernel: nothing handled")
	r = d.hungUp(10, true)
	require.False(t, r.SaveStrikes)
	require.True(t, d.rd.Isolating)
	return d
}

// sendAlone writes the event next asks for at ms (the witness too), taken by
// the receiver's kernel, and returns its sequence; ok false: held.
func sendAlone(t *testing.T, d *rig, ms int) (uint64, bool) {
	t.Helper()
	p, ok := d.next(ms)
	if !ok {
		return 0, false
	}
	seq := p.ResendWitness
	if seq == 0 {
		require.Equal(t, 1, p.Max, "one at a time")
		seq = max(p.From, d.rd.Acked+1)
	}
	d.writeRead(ms, lines(seq, 1, 100))
	return seq, true
}

// pacedSearch connects at 100 and writes events from 1 through last, each
// a pace after the one before, then the receiver closes (FIN): last becomes
// the suspect.
func pacedSearch(t *testing.T, d *rig, last uint64) int {
	t.Helper()
	d.connected(100)
	ms := 100
	for want := uint64(1); want <= last; want++ {
		_, ok := d.next(ms + int(tcpPace.Milliseconds()) - 1)
		if want > 1 {
			assert.False(t, ok, "paced")
		}
		ms += int(tcpPace.Milliseconds())
		seq, ok := sendAlone(t, d, ms)
		require.True(t, ok)
		require.Equal(t, want, seq)
	}
	require.True(t, d.rd.WantsFin)
	require.True(t, d.fin(ms+1, 0), "it took events: a FIN ends the connection")
	r := d.step(delivery.Input{Kind: delivery.Failed, Now: at(ms + 1), Cause: delivery.CauseFin})
	assert.False(t, r.SaveStrikes, "nothing before it was shown handled")
	require.EqualValues(t, last, d.rd.Suspect, "the suspect")
	return ms + 1
}

// requirePace connects at ms and requires the isolated events to go pace
// apart.
func requirePace(t *testing.T, d *rig, ms int, pace time.Duration) {
	t.Helper()
	d.connected(ms)
	_, ok := sendAlone(t, d, ms)
	require.True(t, ok)
	_, ok = d.next(ms + int(pace.Milliseconds()) - 1)
	require.False(t, ok, "paced")
	_, ok = d.next(ms + int(pace.Milliseconds()))
	require.True(t, ok, "a pace of %v", pace)
}

func TestDeliveryTCPPoison(t *testing.T) {
	d := tcpFailed(t)
	// Searching: paced, and the FIN after 5 names it.
	pacedSearch(t, d, 5)

	// Three connections, each dying on 5 written alone after everything
	// before it lingered.
	for attempt := 1; attempt <= 3; attempt++ {
		start := 1000 * attempt * 10
		d.connected(start)
		for {
			seq, ok := sendAlone(t, d, start)
			require.True(t, ok, "unpaced before the suspect")
			if seq == 4 {
				break
			}
		}
		_, ok := d.next(start + 1999)
		assert.False(t, ok, "the suspect waits until everything before it lingered")
		assert.Equal(t, at(start+2000), d.rd.Wake)
		d.tick(start + 2000)
		require.EqualValues(t, 4, d.rd.Acked, "lingered: handled")
		seq, ok := sendAlone(t, d, start+2000)
		require.True(t, ok)
		require.EqualValues(t, 5, seq)
		_, ok = d.next(start + 3000)
		assert.False(t, ok, "nothing follows the suspect until it lingers")
		require.True(t, d.fin(start+2001, 0))
		r := d.hungUp(start+2001, true)
		assert.Equal(t, attempt, d.rd.Strikes.N)
		if attempt == 3 {
			require.EqualValues(t, 5, r.SetAside)
		}
	}
	d.setAside(5)
	assert.False(t, d.rd.Isolating, "the receiver handled nothing after it: no more isolation")
	d.connected(50000)
	p, ok := d.next(50000)
	require.True(t, ok)
	assert.Equal(t, 100, p.Max, "a batch")
}

func TestDeliveryTCPNoEvidence(t *testing.T) {
	t.Run("died with events unread: no suspect, slower", func(t *testing.T) {
		d := tcpFailed(t)
		d.connected(100)
		sendAlone(t, d, 100)
		sendAlone(t, d, 110)
		r := d.hungUp(115, true) // a reset, no FIN
		assert.False(t, r.SaveStrikes)
		assert.Zero(t, d.rd.Suspect)
		requirePace(t, d, 1000, 2*tcpPace)
	})
	t.Run("a FIN before any event was taken: a receive-only peer", func(t *testing.T) {
		d := tcpFailed(t)
		d.connected(100)
		assert.False(t, d.fin(100, 0))
		assert.False(t, d.rd.WantsFin, "ignored for this connection")
		sendAlone(t, d, 100)
		assert.True(t, d.rd.Connected)
	})
	t.Run("dies on the witness, over and over (a crash loop): no strike", func(t *testing.T) {
		d := newRig(t, testConfig(delivery.KernelTook))
		d.restore(6, delivery.Strikes{Seq: 6, N: 2, Witness: 5})
		require.EqualValues(t, 6, d.rd.Suspect)
		for attempt := 0; attempt < 5; attempt++ {
			start := 10000 * attempt
			d.connected(start)
			seq, ok := sendAlone(t, d, start)
			require.True(t, ok)
			require.EqualValues(t, 5, seq, "the witness first")
			assert.False(t, d.fin(start+1, 0), "only the witness taken")
			_, ok = d.next(start + 1000)
			assert.False(t, ok, "the suspect waits for the witness to linger")
			r := d.hungUp(start+1000, true)
			assert.False(t, r.SaveStrikes)
			assert.Zero(t, r.SetAside)
		}
		assert.Equal(t, 2, d.rd.Strikes.N, "no new strike")
	})
	t.Run("died before the suspect was reached: search again, slower", func(t *testing.T) {
		d := tcpFailed(t)
		ms := pacedSearch(t, d, 5) + 1000
		d.connected(ms)
		sendAlone(t, d, ms)
		sendAlone(t, d, ms)
		require.True(t, d.fin(ms+1, 0))
		r := d.hungUp(ms+1, true)
		assert.False(t, r.SaveStrikes)
		assert.Zero(t, d.rd.Suspect)
		requirePace(t, d, ms+1000, 2*tcpPace)
	})
	t.Run("the suspect lingered: handled, the search goes on", func(t *testing.T) {
		d := tcpFailed(t)
		ms := pacedSearch(t, d, 1) + 1000
		d.connected(ms)
		sendAlone(t, d, ms) // first on the connection, no witness: not evidence
		d.tick(ms + 2000)
		assert.EqualValues(t, 1, d.rd.Acked)
		assert.Zero(t, d.rd.Suspect)
		_, ok := sendAlone(t, d, ms+2000)
		assert.True(t, ok)
	})
}

// The pace doubles while a search finds nothing, and starts again at
// tcpPace once an isolation is over.
func TestDeliveryTCPPaceResets(t *testing.T) {
	d := newRig(t, testConfig(delivery.KernelTook))
	d.restore(1, delivery.Strikes{})
	d.connected(0)
	d.writeRead(0, lines(1, 2, 100))
	d.hungUp(10, true)
	d.connected(100)
	sendAlone(t, d, 100)
	sendAlone(t, d, 110)
	d.hungUp(115, true) // a reset, no FIN: slower
	requirePace(t, d, 1000, 2*tcpPace)
	sendAlone(t, d, 1020)
	d.tick(3020)
	require.EqualValues(t, 2, d.rd.Acked, "lingered")
	p, ok := d.next(3020)
	require.True(t, ok)
	require.Equal(t, 100, p.Max, "isolation over: a batch")
	d.writeRead(3020, lines(3, 2, 100))
	d.hungUp(3030, true)
	require.True(t, d.rd.Isolating)
	requirePace(t, d, 4000, tcpPace)
}
