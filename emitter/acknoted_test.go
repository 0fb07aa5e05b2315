//go:build linux

package emitter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// killedCopy copies the spool's files as a process kill leaves them (the
// page cache kept) and reports the sequence the next start resends from, 0
// if none is pending. The receiver note is left out: this is what the spool
// alone shows.
func killedCopy(t *testing.T, e *Emitter) uint64 {
	t.Helper()
	d := t.TempDir()
	require.NoError(t, os.Chmod(d, 0o700))
	for _, name := range []string{"spool.db", "marks"} {
		b, err := os.ReadFile(filepath.Join(e.spool.Dir(), name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d, name), b, 0o600))
	}
	st, _, err := wal.Inspect(d, 0)
	require.NoError(t, err)
	return st.FirstSeq
}

// While the receiver note covers an ack (written through it, naming the
// reader), the spool leaves its marks file to the next append (AckNoted);
// when the connection ends, the note stops covering it and the marks file
// must hold it, so that a kill then does not resend what was read.
func TestAcksTheNoteCoveredAreMarkedWhenTheConnectionEnds(t *testing.T) {
	t.Parallel()
	e, rcv := openOnReceiver(t, Options{})
	caughtUp(t, e, rcv)
	ctx := context.Background()
	sent := 1
	emit := func(ev string) {
		require.NoError(t, e.Emit(ctx, []byte(ev)))
		sent++
		require.Eventually(t, func() bool { return len(rcv.Lines()) == sent && settled(e.d) }, 5*time.Second, time.Millisecond)
	}
	// Once the note names the reader, an Emit commits, then its look acks
	// what the receiver read past: no commit carries that ack, and a kill
	// now would find the acked event pending.
	acked, unwritten := uint64(0), false
	for i := 0; !unwritten; i++ {
		require.Less(t, i, 500, "no ack was left to the next append")
		emit(fmt.Sprint("event ", i))
		e.d.ctl.run.Lock()
		acked, unwritten = e.d.view.acked, e.d.w.peer.owed && e.d.view.acked != 0 && killedCopy(t, e) == e.d.view.acked
		e.d.ctl.run.Unlock()
		time.Sleep(time.Millisecond)
	}

	require.NoError(t, rcv.Kill())
	require.Eventually(t, func() bool { return killedCopy(t, e) > acked }, 5*time.Second, 5*time.Millisecond,
		"once the connection ends, a kill resends nothing read")
}
