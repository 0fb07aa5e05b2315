package emitter_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/wal"
)

// A process that dropped events and was killed before it logged them: the
// next start reports them, once.
func TestNextStartReportsUnreportedLosses(t *testing.T) {
	t.Parallel()
	r := &rig{t: t, logs: &logSink{}}
	dir := t.TempDir()
	r.sock, r.spool = dir+"/events.sock", dir+"/spool"
	// A spool this version wrote (it records what was reported)...
	r.open(nil)
	require.NoError(t, r.em.Close(context.Background()))
	// ...then a process that drops and dies without a word.
	w, err := wal.Open(r.spool, &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes})
	require.NoError(t, err)
	ev := make([]byte, 1000)
	for w.Stats().DroppedOldest.Events < 29 {
		_, err := w.Append(context.Background(), ev)
		require.NoError(t, err)
	}
	dropped := w.Stats().DroppedOldest.Events
	require.NoError(t, w.Close())

	r.open(&emitter.Options{MaxSpoolBytes: wal.MinMaxBytes})
	msg := fmt.Sprintf("the previous run dropped %d events and did not report it", dropped)
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg))
	require.EqualValues(t, dropped, r.logs.sum(msg, "unreported_events"))
	require.NoError(t, r.em.Close(context.Background()))
	r.open(&emitter.Options{MaxSpoolBytes: wal.MinMaxBytes})
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg), "reported once, not at every start")
}

// Rate-limited warnings about events not spooled add up to the total: the
// ones held back are logged at Close.
func TestNotSpooledLinesAddUp(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, &emitter.Options{MaxSpoolBytes: wal.MinMaxBytes, OnFull: wal.DropNewest, WarnInterval: time.Hour})
	ev := string(make([]byte, 1000))
	refused := 0
	for i := 0; i < 3000; i++ {
		if err := r.em.Emit(context.Background(), []byte(ev)); err != nil {
			refused++
		}
	}
	require.Positive(t, refused)
	require.NoError(t, r.em.Close(context.Background()))
	const msg = "events not spooled, echoed only"
	require.Equal(t, 2, r.logs.count(slog.LevelWarn, msg), "the first at once, the rest at Close")
	require.Equal(t, refused, r.logs.sum(msg, "events"))
}
