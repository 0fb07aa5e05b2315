package wal

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/evspool/evspool/internal/testkit/clocktest"
)

// Records carry the boot clock: within a boot their age ignores wall steps;
// after a reboot only the wall clock is left.
func TestEntryAgeIgnoresWallStepsWithinABoot(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true, Clock: clk})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.Append(context.Background(), []byte("a"))
	require.NoError(t, err)
	clk.Advance(time.Second)
	clk.StepWall(37 * time.Second)
	es, err := w.Read(0, 10, 0)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.True(t, es[0].ThisBoot)
	require.Equal(t, time.Second, es[0].Age(clk.Now(), clk.Boot()), "the step is not age")
	clk.StepWall(-time.Hour)
	require.Equal(t, time.Second, es[0].Age(clk.Now(), clk.Boot()))

	clk.Reboot("fake-boot-2")
	es, err = w.Read(0, 10, 0)
	require.NoError(t, err)
	require.False(t, es[0].ThisBoot, "a boot clock of another boot compares with nothing")
	require.Equal(t, clk.Now().Sub(es[0].Time), es[0].Age(clk.Now(), clk.Boot()))

	// The first append of the new boot starts its records; the old ones stay
	// on the wall clock.
	_, err = w.Append(context.Background(), []byte("b"))
	require.NoError(t, err)
	clk.Advance(2 * time.Second)
	es, err = w.Read(0, 10, 0)
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.False(t, es[0].ThisBoot)
	require.True(t, es[1].ThisBoot)
	require.Equal(t, 2*time.Second, es[1].Age(clk.Now(), clk.Boot()))
}

// A spool written by earlier versions (records without the boot clock, no
// boot in the meta bucket) is read as it was: data, time, wall-clock ages;
// new records appended after them get the boot clock; and compaction and
// salvage keep both kinds of record as they are.
func TestVersion1RecordsStillRead(t *testing.T) {
	clk := clocktest.NewFake(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true, Clock: clk})
	require.NoError(t, err)
	_, err = w.Append(context.Background(), []byte("old-1"), []byte("old-2"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	// Rewrite them as earlier versions wrote them.
	db, err := bolt.Open(w.Path(), 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx *bolt.Tx) error {
		eb := tx.Bucket(eventsBucket)
		for seq, data := range map[uint64]string{1: "old-1", 2: "old-2"} {
			if err := eb.Put(seqKey(seq), encodeRecordV1(seqKey(seq), clk.Now().UnixNano(), []byte(data))); err != nil {
				return err
			}
		}
		mb := tx.Bucket(metaBucket)
		require.NoError(t, mb.Delete(keyBootID))
		return mb.Delete(keyBootFirstSeq)
	}))
	require.NoError(t, db.Close())

	clk.Advance(time.Minute)
	w, err = Open(dir, &Options{NoSync: true, Clock: clk})
	require.NoError(t, err)
	defer w.Close()
	require.Nil(t, w.Salvaged(), "version 1 records are sound")
	_, err = w.Append(context.Background(), []byte("new"))
	require.NoError(t, err)
	check := func(what string) {
		es, err := w.Read(0, 10, 0)
		require.NoError(t, err, what)
		require.Len(t, es, 3, what)
		for i, want := range []string{"old-1", "old-2", "new"} {
			require.Equal(t, want, string(es[i].Data), what)
		}
		require.False(t, es[0].ThisBoot, what)
		require.Equal(t, time.Minute, es[0].Age(clk.Now(), clk.Boot()), what)
		require.True(t, es[2].ThisBoot, what)
		require.Zero(t, es[2].Age(clk.Now(), clk.Boot()), what)
		st := w.Stats()
		require.EqualValues(t, len("old-1old-2new"), st.PendingBytes, what)
	}
	check("after open")
	require.NoError(t, w.Compact())
	check("after compaction")
	_, err = w.Repair(ErrCorrupt)
	require.NoError(t, err)
	check("after salvage")
	require.NoError(t, w.Ack(3))
	require.Zero(t, w.Stats().PendingBytes, "deletions count the bytes of both kinds")
}
