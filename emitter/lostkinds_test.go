package emitter_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/wal"
)

// damagedSpool leaves in dir a spool of 50 pending events, one a commit,
// whose 25th record has a flipped bit: a salvage recovers the other 49.
func damagedSpool(t *testing.T, dir string) {
	t.Helper()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	for i := 1; i <= 50; i++ {
		_, err := w.Append(context.Background(), lossEvent(i))
		require.NoError(t, err)
	}
	// As the first emitter on a spool records: nothing reported yet.
	ledger.New(ledger.Config{}).Open(w, 0)
	require.NoError(t, w.Close())
	flipBit(t, filepath.Join(dir, "spool.db"), lossEvent(25))
}

func lossEvent(i int) []byte {
	return []byte(fmt.Sprintf("event %03d %s", i, bytes.Repeat([]byte("p"), 200)))
}

// flipBit flips a bit in the middle of the only copy of ev in the file.
func flipBit(t *testing.T, path string, ev []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	at := bytes.Index(raw, ev)
	require.Positive(t, at)
	require.Equal(t, -1, bytes.Index(raw[at+1:], ev), "one copy only")
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	_, err = f.WriteAt([]byte{raw[at+100] ^ 0x01}, int64(at+100))
	require.NoError(t, err)
}

func spoolRig(t *testing.T) *rig {
	dir := t.TempDir()
	return &rig{t: t, sock: dir + "/events.sock", spool: dir + "/spool", logs: &logSink{}}
}

const salvagedMsg = "spool was damaged and has been salvaged"

// Events a salvage at Open could not read are this process's loss: in
// Stats.Unreadable and Lost, logged once with the salvage, and recorded as
// reported, so the next start neither reports nor counts them again.
func TestSalvageAtOpenIsALoss(t *testing.T) {
	t.Parallel()
	r := spoolRig(t)
	damagedSpool(t, r.spool)
	r.open(nil)
	st := r.em.Stats()
	require.EqualValues(t, 1, st.Unreadable)
	require.EqualValues(t, 1, st.LostByKind().Unreadable)
	require.EqualValues(t, 1, st.Lost())
	require.EqualValues(t, 1, st.Spool.Unreadable)
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, salvagedMsg))
	require.EqualValues(t, 1, r.logs.sum(salvagedMsg, "unreadable_events"))
	require.Zero(t, r.logs.count(slog.LevelWarn, "the previous run found 1 events unreadable in its damaged spool and did not report it"))
	require.NoError(t, r.em.Close(context.Background()))

	r.open(nil)
	st = r.em.Stats()
	require.Zero(t, st.Lost(), "reported by the run that found it")
	require.EqualValues(t, 1, st.Spool.Unreadable, "the spool keeps the total")
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, salvagedMsg))
}

// A process that salvaged the spool and was killed before it logged what
// was unreadable: the next start reports it, counts it as its own loss, and
// only once.
func TestNextStartReportsUnreportedSalvage(t *testing.T) {
	t.Parallel()
	r := spoolRig(t)
	damagedSpool(t, r.spool)
	// The salvage of a process that dies without a word: the wal salvages
	// and records the count, nothing logs it.
	w, err := wal.Open(r.spool, &wal.Options{NoSync: true})
	require.NoError(t, err)
	require.NotNil(t, w.Salvaged())
	require.EqualValues(t, 1, w.Salvaged().Missing)
	require.NoError(t, w.Close())

	r.open(nil)
	const msg = "the previous run found 1 events unreadable in its damaged spool and did not report it"
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg))
	require.EqualValues(t, 1, r.logs.sum(msg, "unreported_events"))
	require.Zero(t, r.logs.count(slog.LevelWarn, salvagedMsg), "this start found the spool sound")
	require.EqualValues(t, 1, r.em.Stats().Unreadable)
	require.EqualValues(t, 1, r.em.Stats().Lost(), "the process that reports a loss counts it")
	require.NoError(t, r.em.Close(context.Background()))

	r.open(nil)
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg), "reported once, not at every start")
	require.Zero(t, r.em.Stats().Lost())
}

// Damage the drainer meets while delivering ("damaged at sequence 25:
// record checksum mismatch") is salvaged and its unreadable events counted
// as damage found at Open is.
func TestSalvageWhileDrainingIsALoss(t *testing.T) {
	t.Parallel()
	r := spoolRig(t)
	r.open(nil)
	for i := 1; i <= 50; i++ {
		require.NoError(t, r.em.Emit(context.Background(), lossEvent(i)))
	}
	require.Zero(t, r.em.Stats().Lost())
	flipBit(t, filepath.Join(r.spool, "spool.db"), lossEvent(25))
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	require.Eventually(t, func() bool { return r.em.Stats().Unreadable == 1 }, 10*time.Second, 5*time.Millisecond)
	r.flush(10 * time.Second)
	require.Len(t, waitLines(t, rcv, 49), 49)
	st := r.em.Stats()
	require.EqualValues(t, 1, st.Lost())
	require.EqualValues(t, 49, st.Delivered)
	require.NoError(t, r.em.Close(context.Background()))
	require.EqualValues(t, 1, r.logs.sum(salvagedMsg, "unreadable_events")+r.logs.sum(salvagedMsg+": events lost", "unreadable_events"),
		"logged once")

	r.open(nil)
	require.Zero(t, r.em.Stats().Lost(), "reported by the run that found it")
	require.Zero(t, r.logs.count(slog.LevelWarn, "the previous run found 1 events unreadable in its damaged spool and did not report it"))
}

// Events refused before the spool (Emit's invalid ones, a producer's
// through Refuse) are lost: counted, recorded in the spool, logged with
// counts that add up, and not reported again by the next start.
func TestRefusedEventsAreLosses(t *testing.T) {
	t.Parallel()
	r := spoolRig(t)
	r.open(&emitter.Options{WarnInterval: time.Hour})
	require.ErrorIs(t, r.em.Emit(context.Background(), []byte("two\nlines")), emitter.ErrNewline)
	r.em.Refuse(2, &emitter.EventSizeError{Size: 70001, Limit: 65536})
	st := r.em.Stats()
	require.EqualValues(t, 3, st.Refused)
	require.EqualValues(t, 3, st.LostByKind().Refused)
	require.EqualValues(t, 3, st.Lost())
	require.EqualValues(t, 3, st.SpoolLosses().Refused)
	require.NoError(t, r.em.Close(context.Background()))
	w, err := wal.Open(r.spool, &wal.Options{NoSync: true})
	require.NoError(t, err)
	total, reported := ledger.Reported(w)
	require.NoError(t, w.Close())
	require.Equal(t, ledger.Losses{ledger.Refused: 3}, total, "recorded in the spool")
	require.Equal(t, total, reported)
	const msg = "events refused, not spooled"
	require.Equal(t, 2, r.logs.count(slog.LevelWarn, msg), "the first at once, the rest at Close")
	require.Equal(t, 3, r.logs.sum(msg, "events"))
	v, ok := r.logs.attr(msg, "reason")
	require.True(t, ok)
	require.Equal(t, "not_a_line", v.String())

	r.open(nil)
	require.Zero(t, r.em.Stats().Lost())
	require.Zero(t, r.logs.count(slog.LevelWarn, "the previous run refused 3 lines (over the size limit, or not a line) and did not report it"))
}

// Refusals a killed process recorded but had not logged yet (rate-limited)
// are reported, and counted, by the next start.
func TestNextStartReportsUnreportedRefusals(t *testing.T) {
	t.Parallel()
	r := spoolRig(t)
	r.open(nil)
	require.NoError(t, r.em.Close(context.Background()))
	w, err := wal.Open(r.spool, &wal.Options{NoSync: true})
	require.NoError(t, err)
	// A process that logged 1 refusal and recorded 4 more, held back.
	b := ledger.New(ledger.Config{Interval: time.Hour})
	b.Open(w, 0)
	b.Note(ledger.Refused, 1)
	b.Note(ledger.Refused, 4)
	require.NoError(t, w.Close())

	r.open(nil)
	const msg = "the previous run refused 4 lines (over the size limit, or not a line) and did not report it"
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg))
	require.EqualValues(t, 4, r.em.Stats().Refused)
	require.EqualValues(t, 4, r.em.Stats().Lost(), "the process that reports a loss counts it")
	require.NoError(t, r.em.Close(context.Background()))
	r.open(nil)
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg), "once")
}
