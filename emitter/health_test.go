package emitter_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

func TestAliveAndReadyWhileRunning(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, nil) // no receiver: an outage is neither dead nor unready
	require.NoError(t, r.em.Alive())
	require.NoError(t, r.em.Ready())
	r.emitAll([]string{"held back"})
	require.Eventually(t, func() bool { return r.em.Stats().DialErrors > 3 }, 5*time.Second, time.Millisecond)
	require.NoError(t, r.em.Alive())
	require.NoError(t, r.em.Ready())

	require.NoError(t, r.em.Close(context.Background()))
	require.ErrorIs(t, r.em.Alive(), emitter.ErrNotAlive)
	require.ErrorIs(t, r.em.Ready(), emitter.ErrNotReady)
	require.ErrorIs(t, r.em.Ready(), emitter.ErrClosed)
}

// A drainer stuck in a call no deadline reaches (here a dial that ignores its
// context) is not alive; once it moves again it is.
func TestAliveNoticesWedgedDrainer(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	stuck := make(chan struct{}, 1)
	var d net.Dialer
	r := newRig(t, nil, &emitter.Options{
		DialTimeout: 10 * time.Millisecond, WriteTimeout: 10 * time.Millisecond, StallTimeout: 10 * time.Millisecond,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			select {
			case stuck <- struct{}{}:
				<-release // ignores ctx: wedged
			default:
			}
			return d.DialContext(ctx, network, addr)
		},
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	var err error
	require.Eventually(t, func() bool { err = r.em.Alive(); return err != nil }, 5*time.Second, time.Millisecond)
	require.ErrorIs(t, err, emitter.ErrNotAlive)
	require.ErrorContains(t, err, "has not moved for")
	require.NoError(t, r.em.Ready(), "the spool is fine")
	close(release)
	require.Eventually(t, func() bool { return r.em.Alive() == nil }, 5*time.Second, time.Millisecond)
}

// Waiting in the preamble hook, however long, is alive.
func TestAliveWhileWaitingInPreamble(t *testing.T) {
	t.Parallel()
	entered := make(chan time.Time, 1)
	r := newRig(t, &refrecv.Options{}, &emitter.Options{
		DialTimeout: 10 * time.Millisecond, WriteTimeout: 10 * time.Millisecond, StallTimeout: 10 * time.Millisecond,
		Preamble: func(ctx context.Context, w io.Writer) error {
			entered <- time.Now()
			<-ctx.Done()
			return ctx.Err()
		},
	})
	at := within(t, entered, "preamble called")
	// The wedge limit here is 20 ms: wait until it has passed three times over.
	require.Eventually(t, func() bool { return time.Since(at) > 60*time.Millisecond }, 5*time.Second, time.Millisecond)
	require.NoError(t, r.em.Alive())
}

// A failed commit (a full disk) makes the emitter unready until a commit
// succeeds again.
func TestReadyFollowsCommits(t *testing.T) {
	t.Parallel()
	disk := mountTmpfs(t, 2<<20)
	sock := filepath.Join(t.TempDir(), "events.sock")
	em, err := emitter.Open(sock, filepath.Join(disk, "spool"), &emitter.Options{Stdout: io.Discard, MaxSpoolBytes: 64 << 20})
	require.NoError(t, err)
	defer em.Close(context.Background())
	require.NoError(t, em.Ready())
	for i := 0; em.Emit(context.Background(), fullBatch(i, 50)...) == nil; i += 50 {
		require.Less(t, i, 100000, "the disk never filled")
	}
	err = em.Ready()
	require.ErrorIs(t, err, emitter.ErrNotReady)
	require.ErrorContains(t, err, "last spool commit failed")

	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{CountOnly: true})
	require.NoError(t, err)
	defer rcv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, em.Flush(ctx))
	require.NoError(t, em.Emit(context.Background(), []byte("room again")))
	require.NoError(t, em.Ready())
}

// fullBatch is n events of about 200 bytes numbered from i: 50 a commit fill
// a small disk in a fraction of the time one a commit takes under -race.
func fullBatch(i, n int) [][]byte {
	evs := make([][]byte, n)
	for j := range evs {
		evs[j] = []byte(fmt.Sprintf("full %06d %s", i+j, strings.Repeat("p", 200)))
	}
	return evs
}
