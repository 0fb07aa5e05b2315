package wal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// txID is the id of the spool file's last committed write transaction:
// every commit, synced or not, raises it by one.
func txID(t *testing.T, w *WAL) int {
	t.Helper()
	var id int
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	require.NoError(t, w.db.View(func(tx *bolt.Tx) error { id = int(tx.ID()); return nil }))
	return id
}

// fileKeys counts the events the file holds, hidden or not: those of
// every value, a frame's all (record.go).
func fileKeys(t *testing.T, w *WAL) int {
	t.Helper()
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	n := 0
	require.NoError(t, w.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(eventsBucket).ForEach(func(k, v []byte) error {
			val, err := decodeValue(k, v)
			n += val.n
			return err
		})
	}))
	return n
}

func ackEvent(i int) []byte { return fmt.Appendf(nil, "event %06d %s", i, make([]byte, 80)) }

// TestAckRidesOnNextAppend: the drainer's steady state is append, read,
// acknowledge. Each Ack used to be a synced commit of its own (two per
// batch: 805 fdatasyncs for 200,000 events through `evspool run`); the
// deletions now ride in the next append's transaction.
func TestAckRidesOnNextAppend(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	ctx := context.Background()
	const rounds = 200
	before := txID(t, w)
	for i := range rounds {
		last, err := w.Append(ctx, ackEvent(2*i), ackEvent(2*i+1))
		require.NoError(t, err)
		es, err := w.Read(0, 0, 0)
		require.NoError(t, err)
		require.Len(t, es, 2, "round %d: acknowledged entries must not be read again", i)
		require.Equal(t, last, es[1].Seq)
		require.NoError(t, w.Ack(last))
		require.Zero(t, w.Len())
	}
	commits := txID(t, w) - before
	keys := fileKeys(t, w)
	t.Logf("%d append+ack rounds: %d commits, %d entries left in the file", rounds, commits, keys)
	require.LessOrEqual(t, commits, rounds+1, "acknowledgements cost commits of their own")
	require.Zero(t, w.Stats().AckCommits)
	// A short queue (it fits a leaf): each append deletes what was
	// acknowledged before it, so the file keeps only the last append's two
	// (acknowledged, hidden).
	require.Equal(t, 2, keys, "appends did not delete what was acknowledged before them")
}

// Behind a backlog larger than a leaf page, deletions ride in runs of
// rideMin: whole leaves cost less per entry than the front of one.
func TestAckRidesInRunsBehindABacklog(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	ctx := context.Background()
	backlog := make([][]byte, rideMin)
	for i := range backlog {
		backlog[i] = ackEvent(i)
	}
	_, err = w.Append(ctx, backlog...)
	require.NoError(t, err)
	const rounds = 300
	for i := range rounds {
		_, err := w.Append(ctx, ackEvent(rideMin+i))
		require.NoError(t, err)
		require.NoError(t, w.Ack(uint64(i+1))) // the oldest: rideMin stay pending
	}
	require.Equal(t, uint64(rideMin), w.Len())
	// The append of round rideMin deleted the first rideMin; the 44 acked
	// since wait for more.
	require.Equal(t, rideMin+rounds-rideMin, fileKeys(t, w))
	require.Zero(t, w.Stats().AckCommits)
}

// TestAckDrainBatchesDeletions: a backlog drained with no appends to ride
// on deletes in a few batched commits, not one per Ack; entries leave Read,
// Len and Stats at once.
func TestAckDrainBatchesDeletions(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	ctx := context.Background()
	const total, batch = 40000, 100
	for i := 0; i < total; i += 1000 {
		events := make([][]byte, 1000)
		for j := range events {
			events[j] = ackEvent(i + j)
		}
		_, err := w.Append(ctx, events...)
		require.NoError(t, err)
	}
	prev, commits := txID(t, w), 0
	acks := 0
	for from := uint64(0); ; acks++ {
		es, err := w.Read(from, batch, 0)
		require.NoError(t, err)
		if len(es) == 0 {
			break
		}
		if from != 0 {
			require.Equal(t, from, es[0].Seq, "a hole or a replay after Ack")
		}
		last := es[len(es)-1].Seq
		require.NoError(t, w.Ack(last))
		from = last + 1
		// A compaction starts a new file, with ids from 1: count it once.
		if id := txID(t, w); id >= prev {
			commits += id - prev
			prev = id
		} else {
			commits, prev = commits+1, id
		}
		require.Equal(t, uint64(total)-last, w.Len())
		require.Equal(t, uint64(total)-last, w.Stats().PendingEvents)
		if last < total {
			require.Equal(t, last+1, w.FirstSeq())
		}
	}
	// 40,000 entries of ~100 bytes cost ~5.5 MB: a few commits of
	// ackDebtMax, plus the compaction that gives the space back.
	t.Logf("%d acks: %d commits, %d deletion commits", acks, commits, w.Stats().AckCommits)
	require.Equal(t, total/batch, acks)
	require.LessOrEqual(t, commits, 10, "deletions were not batched")
	require.Zero(t, w.FirstSeq())
}

// TestFlushAcksWhenIdle: with no append to carry them, FlushAcks commits
// the deletions, unless a commit was made within the idle time.
func TestFlushAcksWhenIdle(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	var last uint64
	for i := range 3 { // records of their own: a frame leaves only whole
		var err error
		last, err = w.Append(context.Background(), ackEvent(i+1))
		require.NoError(t, err)
	}
	require.False(t, w.AcksPending())
	require.NoError(t, w.Ack(last-1))
	require.True(t, w.AcksPending())
	require.Equal(t, 3, fileKeys(t, w), "Ack alone does not commit")
	require.NoError(t, w.FlushAcks(1<<62), "not idle long enough: nothing to do")
	require.Equal(t, 3, fileKeys(t, w))
	require.NoError(t, w.FlushAcks(0))
	require.Equal(t, 1, fileKeys(t, w))
	require.False(t, w.AcksPending(), "the deletions are committed")
	w.wmu.Lock()
	require.True(t, w.AcksPending(), "a commit runs: it may carry deletions, and AcksPending does not wait for it")
	w.wmu.Unlock()
	require.Equal(t, uint64(1), w.Stats().AckCommits)
	require.NoError(t, w.FlushAcks(0), "nothing left to delete")
	require.Equal(t, uint64(1), w.Stats().AckCommits)
}

// TestAckedAfterCrashAndPowerLoss opens copies of a spool taken after Acks
// that no commit carried: what a killed process leaves (the marks file as
// written) and what a power loss may leave (the marks file's last write
// lost, the synced commits kept). After the kill no acknowledged entry
// comes back; after the power loss they come back as one contiguous,
// in-order run from the head, nothing missing.
func TestAckedAfterCrashAndPowerLoss(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, nil)
	require.NoError(t, err)
	defer w.Close()
	ctx := context.Background()
	for i := range 10 {
		_, err := w.Append(ctx, ackEvent(i))
		require.NoError(t, err)
	}
	require.NoError(t, w.Ack(3))
	require.NoError(t, w.FlushAcks(0)) // committed: no longer in the file
	marksSynced, err := os.ReadFile(filepath.Join(dir, marksFileName))
	require.NoError(t, err)
	_, err = w.Append(ctx, ackEvent(10))
	require.NoError(t, err)
	require.NoError(t, w.Ack(7)) // not committed: only in the marks file
	require.Equal(t, 8, fileKeys(t, w))

	copyTo := func(marks []byte) string {
		d := t.TempDir()
		require.NoError(t, os.Chmod(d, 0o700))
		db, err := os.ReadFile(filepath.Join(dir, fileName))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(d, fileName), db, 0o600))
		if marks == nil {
			marks, err = os.ReadFile(filepath.Join(dir, marksFileName))
			require.NoError(t, err)
		}
		require.NoError(t, os.WriteFile(filepath.Join(d, marksFileName), marks, 0o600))
		return d
	}
	open := func(d string) *WAL {
		c, err := Open(d, nil)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	seqs := func(c *WAL) []uint64 {
		es, err := c.Read(0, 0, 0)
		require.NoError(t, err)
		var out []uint64
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}

	killedDir := copyTo(nil)
	st, es, err := Inspect(killedDir, 100)
	require.NoError(t, err)
	require.Equal(t, uint64(4), st.PendingEvents, "Inspect of a spool a killed process left")
	require.Equal(t, uint64(8), st.FirstSeq)
	require.Len(t, es, 4)
	require.Equal(t, uint64(8), es[0].Seq)
	killed := open(killedDir)
	require.Equal(t, []uint64{8, 9, 10, 11}, seqs(killed), "after a process crash")
	require.Equal(t, uint64(4), killed.Len())

	powerCut := open(copyTo(marksSynced))
	require.Equal(t, []uint64{4, 5, 6, 7, 8, 9, 10, 11}, seqs(powerCut), "after a power loss")
}

// TestAckSurvivesAKillBeforeTheNextCommit: Ack writes its number to the
// marks file at once, so a kill before any commit deletes the entry (what a
// killed process leaves: the files as they are, page cache kept) does not
// bring it back, in a queue that fits a page and in a longer one.
func TestAckSurvivesAKillBeforeTheNextCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	ctx := context.Background()
	marked := func() uint64 {
		b, err := os.ReadFile(filepath.Join(dir, marksFileName))
		require.NoError(t, err)
		var m marks
		m.parse(b)
		return m.removed
	}
	afterKill := func() []uint64 {
		c, err := Open(salvageCopy(t, dir), nil)
		require.NoError(t, err)
		defer c.Close()
		return salvageSeqs(t, c)
	}

	_, err = w.Append(ctx, ackEvent(1))
	require.NoError(t, err)
	require.NoError(t, w.Ack(1))
	require.Equal(t, uint64(1), marked(), "written at the Ack")
	require.Empty(t, afterKill(), "a kill before the next commit keeps the ack")

	var last uint64
	for i := range 60 {
		last, err = w.Append(ctx, ackEvent(2+i))
		require.NoError(t, err)
	}
	require.NoError(t, w.Ack(last-50))
	require.Equal(t, last-50, marked())
	got := afterKill()
	require.Len(t, got, 50)
	require.Equal(t, last-49, got[0], "what follows the ack, from the first not acked")
}
