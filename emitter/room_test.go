//go:build linux

package emitter

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/delivery"
	"github.com/evspool/evspool/internal/sockwait"
	"github.com/evspool/evspool/wal/clock"
)

// roomRig is a drainer holding one end of a Unix connection; peer is the
// receiver's end.
func roomRig(t *testing.T) (*drainer, net.Conn) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "r.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	peer, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { peer.Close() })
	opts, err := (&Options{WriteTimeout: time.Second, Clock: clock.System(), Stdout: io.Discard}).withDefaults()
	require.NoError(t, err)
	d := &drainer{ctx: context.Background(), opts: &opts, dv: delivery.New(deliveryConfigOf(&opts)), link: &link{}}
	d.logs = logs{delivery: newReporter(&opts), deadLetter: newReporter(&opts), out: &outage{rep: newReporter(&opts), log: opts.Logger}}
	d.w.conn, d.w.waiter = conn, sockwait.New(conn)
	_, d.w.unix = conn.(*net.UnixConn)
	return d, peer
}

// The reading after a chunk proves the next chunk's room without
// a new reading; a proof that does not cover the chunk, or none, takes one.
func TestRoomProofSkipsTheReading(t *testing.T) {
	t.Parallel()
	d, peer := roomRig(t)
	chunk := make([]byte, 2048)

	require.NoError(t, d.awaitRoom(len(chunk), false))
	require.Equal(t, 1, d.w.room.readings, "nothing known yet: a reading")
	require.Positive(t, d.w.room.sndbuf, "the size it read")

	// A chunk, and the reading after it.
	n, before, err := d.gatedWrite(chunk, gateEvents)
	require.NoError(t, err)
	require.Equal(t, len(chunk), n)
	assert.Zero(t, before, "nothing queued before the first write")
	after, ok := d.unread()
	require.True(t, ok)
	require.Greater(t, after, len(chunk), "a buffer costs more than its bytes")
	d.w.room.queued, d.w.room.ok = after, true

	// The receiver reads it all; the proof still stands (an upper bound),
	// and no reading is taken.
	buf := make([]byte, 4096)
	_, err = peer.Read(buf)
	require.NoError(t, err)
	require.NoError(t, d.awaitRoom(len(chunk), false))
	assert.Equal(t, 1, d.w.room.readings, "proven by the last reading: no new one taken")

	// The reading before the write is taken afresh, not the proof's bound:
	// the receiver read in between, and the write's memory must show whole.
	require.Eventually(t, func() bool { u, _ := d.unread(); return u == 0 }, time.Second, time.Millisecond)
	_, before, err = d.gatedWrite(chunk, gateEvents)
	require.NoError(t, err)
	assert.Zero(t, before, "read just before the write, not the proof's %d", after)

	// A proof that does not cover the chunk takes a reading.
	d.w.room.queued = d.w.room.sndbuf
	require.NoError(t, d.awaitRoom(len(chunk), false))
	assert.Equal(t, 2, d.w.room.readings)

	// No proof (a preamble was written since): a reading.
	d.w.room.queued, d.w.room.ok = 0, false
	require.NoError(t, d.awaitRoom(len(chunk), false))
	assert.Equal(t, 3, d.w.room.readings)
}

// noteWrite keeps the reading after a write as the next chunk's proof on a Unix
// socket, and never where the reading failed.
func TestWroteKeepsTheReadingAfter(t *testing.T) {
	t.Parallel()
	d, _ := roomRig(t)
	require.NoError(t, d.step(delivery.Input{Kind: delivery.Connected, Reads: true}))
	require.NoError(t, d.awaitRoom(100, false))
	n, before, err := d.gatedWrite(make([]byte, 99), gateEvents)
	require.NoError(t, err)
	require.Equal(t, 99, n)
	d.noteWrite(entries(1, 1, 99), before, 99, true, false)
	require.True(t, d.w.room.ok)
	u, _ := d.unread()
	assert.Equal(t, u, d.w.room.queued, "the reading after the write")

	d.w.unix = false // TCP: SIOCOUTQ counts bytes, not the buffer's memory
	d.noteWrite(entries(2, 1, 99), before, 99, true, false)
	assert.False(t, d.w.room.ok, "no proof but on a Unix socket")
}

// A preamble due since a hold (PreambleOnRelease) goes before the next
// events, also when the drainer meets it at a write in the middle of a
// batch, read while the gate was shut.
func TestPreambleBeforeEventsAfterHold(t *testing.T) {
	t.Parallel()
	d, peer := roomRig(t)
	d.pub.health = health{clk: d.opts.Clock, base: d.opts.Clock.Now()}
	d.opts.PreambleOnRelease = true
	d.opts.Preamble = func(_ context.Context, w io.Writer) error {
		_, err := io.WriteString(w, "LIVE\n")
		return err
	}
	require.NoError(t, d.step(delivery.Input{Kind: delivery.Connected, Reads: true}))
	d.pub.gate.gen = 1 // held and released since this connection's preamble
	require.NoError(t, d.writeChunk([]byte("event\n"), entries(1, 1, 6), true, false))
	require.NoError(t, peer.SetReadDeadline(time.Now().Add(5*time.Second)))
	got := make([]byte, 0, 16)
	buf := make([]byte, 16)
	for len(got) < len("LIVE\nevent\n") {
		n, err := peer.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	assert.Equal(t, "LIVE\nevent\n", string(got))
}
