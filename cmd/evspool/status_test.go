package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
)

// The status file is written when what it says changes, not when only the
// clock moved: the time of writing and the oldest event's age, which
// inspect ages from that time, are not a change.
func TestStatusWrittenOnChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o700))
	w := newStatusWriter(dir, status{PID: 1, Socket: "s.sock"}, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	path := filepath.Join(dir, statusFile)
	ident := func() uint64 {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		return ino(fi)
	}
	s := emitter.Stats{Connected: true, Emitted: 5, Delivered: 4}
	s.Spool.PendingEvents, s.Spool.OldestTime = 1, time.Now().Add(-time.Minute)
	require.True(t, w.write(s, true), "the first status is written")
	first := ident()

	time.Sleep(10 * time.Millisecond)
	require.False(t, w.write(s, true), "only the clock moved")
	require.Equal(t, first, ident(), "the file was rewritten")

	s.Delivered, s.Spool.PendingEvents = 5, 0
	require.True(t, w.write(s, true))
	require.NotEqual(t, first, ident(), "a change is written (a new file renamed over the old)")
	st, err := readStatus(dir)
	require.NoError(t, err)
	require.EqualValues(t, 5, st.DeliveredEvents)
	require.True(t, st.Running)

	w.final(s)
	st, err = readStatus(dir)
	require.NoError(t, err)
	require.False(t, st.Running, "the last status says evspool stopped")
}

func ino(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }
