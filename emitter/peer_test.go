package emitter_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/testrecv"
	"github.com/evspool/evspool/internal/verify"
)

// evspool stops (here Close; a SIGKILL in the torture's
// TestPrecisionEvspoolKills) with events written but not all handled by a
// receiver that stays up: it handles them anyway, and the next Open on the
// spool, finding the same receiver process, does not resend them.
func TestReopenSameReceiverResendsNothing(t *testing.T) {
	em, rcv, spool, logs := cepRig(t, testrecv.CEPConfig{PerLine: time.Millisecond}, emitter.Options{})
	sent := events("reopen", 300)
	for _, ev := range sent {
		require.NoError(t, em.Emit(context.Background(), []byte(ev)))
	}
	require.Eventually(t, func() bool { return len(rcv.Lines()) >= 50 }, 10*time.Second, time.Millisecond)
	require.NoError(t, em.Close(context.Background()))
	require.Less(t, len(rcv.Lines()), 300, "stopped with events not yet handled")

	reopenResendsNothing(t, spool, rcv, logs, sent)
}

// The receiver accepts later than a new connection waits for it before
// writing (2 s), so the burst is written in full before the accept, when its
// end has no inode yet and it cannot be identified, and nothing is written
// after the accept: the note is made once it has accepted, not given up
// with the writes.
func TestReopenSameReceiverAcceptedLate(t *testing.T) {
	em, rcv, spool, logs := cepRig(t, testrecv.CEPConfig{PerLine: 10 * time.Millisecond, AcceptDelay: 2500 * time.Millisecond}, emitter.Options{})
	sent := events("late", 30)
	burst := make([][]byte, len(sent))
	for i, ev := range sent {
		burst[i] = []byte(ev)
	}
	require.NoError(t, em.Emit(context.Background(), burst...)) // one commit, one write
	time.Sleep(100 * time.Millisecond)
	require.Empty(t, rcv.Lines(), "written before the receiver accepted")
	require.Eventually(t, func() bool { return len(rcv.Lines()) >= 5 }, 10*time.Second, time.Millisecond)
	require.NoError(t, em.Close(context.Background()))
	require.Less(t, len(rcv.Lines()), len(sent), "stopped with events not yet handled")

	reopenResendsNothing(t, spool, rcv, logs, sent)
}

// reopenResendsNothing opens the spool again, to the same receiver, and
// checks that it then has every event once, none resent, and that the new
// emitter said why.
func reopenResendsNothing(t *testing.T, spool string, rcv *testrecv.CEP, logs *logSink, sent []string) {
	t.Helper()
	em2, err := emitter.Open(filepath.Join(filepath.Dir(spool), "s.sock"), spool, &emitter.Options{NoSync: true, Stdout: io.Discard, Logger: slog.New(logs)})
	require.NoError(t, err)
	defer em2.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, em2.Flush(ctx))
	require.Eventually(t, func() bool { return len(rcv.Lines()) >= len(sent) }, 10*time.Second, time.Millisecond)
	res := verify.Check(sent, rcv.Lines())
	t.Logf("%v", res)
	assert.True(t, res.OK(), res.String())
	assert.Zero(t, res.Duplicates)
	assert.Equal(t, 1, logs.count(slog.LevelInfo, "the receiver handled what the previous run wrote to it; not resending that"))
}
