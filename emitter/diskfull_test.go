package emitter_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory, or skips the
// test saying why: mounting needs root (CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a small tmpfs to fill the disk needs root; run as root (CI does) to test a full disk")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("skipped: cannot mount a tmpfs here (%v): a full disk is not tested on this machine", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// On a full disk evspool keeps echoing every event, counts and logs what it
// could not spool, delivers what it did spool once the receiver is back, and
// spools again by itself once space returns.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	disk := mountTmpfs(t, 2<<20)
	sock := filepath.Join(t.TempDir(), "events.sock")
	var out bytes.Buffer
	logs := &logSink{}
	em, err := emitter.Open(sock, filepath.Join(disk, "spool"), &emitter.Options{
		Stdout: &out, Logger: slog.New(logs), MaxSpoolBytes: 64 << 20,
	})
	require.NoError(t, err)
	defer em.Close(context.Background())

	var spooled, refused []string
	// 50 events a commit until the disk is full (one fsync'd commit per
	// event takes ~10 s under -race), then one at a time.
	for i, batch := 0, 50; len(refused) < 20 && i < 100000; i += batch {
		if len(refused) > 0 {
			batch = 1
		}
		evs := make([][]byte, batch)
		for j := range evs {
			evs[j] = []byte(fmt.Sprintf("full %06d %s", i+j, strings.Repeat("p", 200)))
		}
		if err := em.Emit(context.Background(), evs...); err != nil {
			require.ErrorIs(t, err, emitter.ErrSpool)
			for _, ev := range evs {
				refused = append(refused, string(ev))
			}
			continue
		}
		for _, ev := range evs {
			spooled = append(spooled, string(ev))
		}
	}
	require.GreaterOrEqual(t, len(refused), 20, "the disk never filled")
	st := em.Stats()
	require.EqualValues(t, len(refused), st.SpoolErrors, "every event not spooled is counted")
	require.Equal(t, len(spooled)+len(refused), strings.Count(out.String(), "\n"), "every event is echoed, spooled or not")
	require.Equal(t, 1, logs.count(slog.LevelWarn, "events not spooled, echoed only"), "logged once, rate-limited")
	reason, ok := logs.attr("events not spooled, echoed only", "reason")
	require.True(t, ok)
	require.Equal(t, "disk_full", reason.String())

	rcv, err := refrecv.Start("unix", sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, em.Flush(ctx))
	requireDelivered(t, spooled, waitLines(t, rcv, len(spooled)))

	// The drained spool gave its space back: spooling works again.
	require.NoError(t, em.Emit(context.Background(), []byte("after the disk had room again")))
	require.NoError(t, em.Flush(ctx))
	lines := waitLines(t, rcv, len(spooled)+1)
	require.Equal(t, "after the disk had room again", lines[len(lines)-1])
}
