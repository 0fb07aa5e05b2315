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

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/testkit/clocktest"
	"github.com/evspool/evspool/wal"
)

// A line read ReplayLinger ago counts as handled only while its reader is
// still connected, and that is checked when the linger ends, not at the
// last idle check: a receiver that read five events in one read and then
// hung up before the linger's end handled none of them for sure (the last
// read's lines), so none is acknowledged, and all five are resent.
func TestLingerProbesBeforeAcknowledging(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	spool, err := wal.Open(filepath.Join(dir, "spool"), &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer spool.Close()
	for _, ev := range []string{"one", "two", "three", "four", "five"} {
		_, err := spool.Append(context.Background(), []byte(ev))
		require.NoError(t, err)
	}
	o, err := (&Options{Stdout: io.Discard}).withDefaults()
	require.NoError(t, err)
	loss := ledger.New(ledger.Config{Now: o.Clock.Now})
	loss.Open(spool, 0)
	d := newDrainer(sock, &o, spool, loss)
	clk := clocktest.NewFake(time.Now())
	d.opts.Clock = clk

	conn, err := net.Dial("unix", sock)
	require.NoError(t, err)
	peer, err := ln.Accept()
	require.NoError(t, err)
	d.onConnect(conn)
	defer d.disconnect()
	entries, err := spool.Read(1, 10, 0)
	require.NoError(t, err)
	require.NoError(t, d.write(entries))
	buf := make([]byte, 4096)
	_, err = peer.Read(buf) // one read takes all five
	require.NoError(t, err)
	require.NoError(t, d.check())
	require.EqualValues(t, 1, spool.FirstSeq(), "read, not yet handled: the last read")

	require.NoError(t, peer.Close()) // hangs up before the linger ends
	clk.Advance(o.ReplayLinger)
	d.onDeadline()
	assert.EqualValues(t, 1, spool.FirstSeq(), "a receiver gone before the linger ended proved nothing handled")
	assert.Nil(t, d.w.conn, "the hang-up was seen")
}
