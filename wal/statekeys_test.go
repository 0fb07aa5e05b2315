package wal_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// stKeyed appends events, each "key=value" keyed by its key, "clear" a
// clear, anything else without a key, and returns the last sequence.
func stKeyed(t testing.TB, w *wal.WAL, events ...string) uint64 {
	t.Helper()
	evs := make([][]byte, len(events))
	ops := make([]wal.StateOp, len(events))
	for i, e := range events {
		evs[i] = []byte(e)
		switch k, _, ok := bytes.Cut(evs[i], []byte("=")); {
		case e == "clear":
			ops[i].Clear = true
		case ok:
			ops[i].Key = k
		}
	}
	last, err := w.AppendState(t.Context(), evs, ops)
	require.NoError(t, err)
	return last
}

// stState returns the state before seq as "seq:event" strings.
func stState(t testing.TB, w *wal.WAL, before uint64) []string {
	t.Helper()
	es, err := w.State(before)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, string(e.Data))
	}
	return out
}

// TestState: the newest event of each key, in sequence order, only those
// before the sequence asked; acknowledged ones too; a clear retires every
// key before it; the state survives a restart and a compaction.
func TestState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	require.Empty(t, stState(t, w, 100))
	stKeyed(t, w, "a=1", "b=1", "noise", "a=2", "c=1")
	require.Equal(t, []string{"b=1", "a=2", "c=1"}, stState(t, w, 100))
	require.Equal(t, []string{"b=1"}, stState(t, w, 4), "a key whose newest event is not before 4 is left out")
	require.NoError(t, w.Ack(5))
	require.Equal(t, []string{"b=1", "a=2", "c=1"}, stState(t, w, 100), "acknowledged events stay the state")
	require.EqualValues(t, 3, w.Stats().StateKeys)

	stKeyed(t, w, "b=2", "clear", "c=2")
	require.Equal(t, []string{"c=2"}, stState(t, w, 100))
	require.EqualValues(t, 1, w.Stats().StateKeys)
	require.NoError(t, w.Compact())
	require.Equal(t, []string{"c=2"}, stState(t, w, 100))
	require.NoError(t, w.Close())

	w = spOpen(t, dir, &wal.Options{NoSync: true})
	require.Equal(t, []string{"c=2"}, stState(t, w, 100))
	require.EqualValues(t, 1, w.Stats().StateKeys)
	require.EqualValues(t, 8, w.LastSeq())
}

// TestStateBounded: a new key past MaxStateKeys is not kept and is counted;
// known keys still change; a key too long is refused the same way.
func TestStateBounded(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxStateKeys: 2})
	stKeyed(t, w, "a=1", "b=1", "c=1", "a=2")
	require.Equal(t, []string{"b=1", "a=2"}, stState(t, w, 100))
	long := string(bytes.Repeat([]byte("k"), wal.MaxStateKeyLen+1))
	stKeyed(t, w, long+"=1")
	st := w.Stats()
	require.EqualValues(t, 2, st.StateKeys)
	require.EqualValues(t, 2, st.StateRefused)
	require.EqualValues(t, 5, w.Len(), "refused keys' events are appended all the same")
	stKeyed(t, w, "clear", "c=2")
	require.Equal(t, []string{"c=2"}, stState(t, w, 100), "a clear makes room")
}

// TestStateDrops: an event dropped by DropOldest stays its key's newest;
// one refused by DropNewest changes nothing.
func TestStateDrops(t *testing.T) {
	t.Parallel()
	for _, policy := range []wal.Policy{wal.DropOldest, wal.DropNewest} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes, OnFull: policy})
			stKeyed(t, w, "k=first")
			big := bytes.Repeat([]byte("x"), 60<<10)
			var refused bool
			for i := 0; i < 40 && !refused; i++ {
				_, err := w.AppendState(t.Context(), [][]byte{append([]byte("k="), big...)}, []wal.StateOp{{Key: []byte("k")}})
				refused = err != nil
				if refused {
					require.ErrorIs(t, err, wal.ErrFull)
				}
			}
			st := w.Stats()
			es, err := w.State(1 << 40)
			require.NoError(t, err)
			require.Len(t, es, 1)
			switch policy {
			case wal.DropOldest:
				require.NotZero(t, st.DroppedOldest.Events, "the spool must have dropped")
				require.Equal(t, st.LastSeq, es[0].Seq, "the newest, not the first dropped")
			case wal.DropNewest:
				require.True(t, refused)
				require.Equal(t, st.LastSeq, es[0].Seq, "the last appended, not the refused one")
			}
		})
	}
}

// TestStateSetAside: an event set aside as poison is never given out as
// its key's state until a newer event renews the key.
func TestStateSetAside(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true})
	stKeyed(t, w, "a=1", "b=poison")
	require.NoError(t, w.SetStateAside(2))
	require.NoError(t, w.SetStateAside(99), "no key's newest: nothing to do")
	require.Equal(t, []string{"a=1"}, stState(t, w, 100))
	stKeyed(t, w, "b=2")
	require.Equal(t, []string{"a=1", "b=2"}, stState(t, w, 100))
	require.Error(t, w.SetValues(map[string][]byte{"\x00state:\x00a": []byte("x")}), "the state's keys are not the user's")
}

// TestStateSalvage: a damaged file's salvage keeps every key's newest
// event, and none that a clear retired (TestStateStaleCopy: when salvage
// finds a stale copy of one).
func TestStateSalvage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	stKeyed(t, w, "a=1", "gone=1", "b=1")
	stKeyed(t, w, "clear")
	stKeyed(t, w, "a=2", "c=1")
	for i := range uint64(200) {
		_, err := w.Append(t.Context(), spEvent(i, 200))
		require.NoError(t, err)
	}
	stKeyed(t, w, "a=3")
	require.NoError(t, w.Close())
	icDamage(t, filepath.Join(dir, "spool.db"), func(b []byte) {
		i := bytes.LastIndex(b, spEvent(100, 200))
		require.Positive(t, i)
		b[i+100] ^= 0x10
	})
	w = spOpen(t, dir, &wal.Options{NoSync: true})
	require.NotNil(t, w.Salvaged(), "damage not reported")
	require.Equal(t, []string{"c=1", "a=3"}, stState(t, w, 1<<40))
}

// BenchmarkAppendState prices state keys on one-event appends, in CPU
// time (user and system, this process: fsync's own work included): the
// same events with no key, and each renewing one of keys keys. With 10 or
// more, the state no longer fits inline in its bucket's parent page.
func BenchmarkAppendState(b *testing.B) {
	ev := []byte(`{"version":1,"type":"ptp_state","timestamp":"2026-05-12T21:00:00.074311Z","profile":"ptp4l.0.config","iface":"ens1f0","values":{"state":"FREERUN"}}`)
	for _, fsync := range []bool{false, true} {
		for _, keys := range []int{0, 2, 10, 100} {
			b.Run(fmt.Sprintf("fsync=%v/keys=%d", fsync, keys), func(b *testing.B) {
				w, err := wal.Open(b.TempDir(), &wal.Options{NoSync: !fsync})
				require.NoError(b, err)
				defer w.Close()
				ops := make([][]wal.StateOp, max(keys, 1))
				for i := range ops {
					if keys > 0 {
						ops[i] = []wal.StateOp{{Key: fmt.Appendf(nil, "ptp_state\x00ptp4l.0.config\x00ens%d", i)}}
					}
				}
				b.ReportAllocs()
				before := cpuTime(b)
				i := 0
				for b.Loop() {
					last, err := w.AppendState(b.Context(), [][]byte{ev}, ops[i%len(ops)])
					if err != nil {
						b.Fatal(err)
					}
					if i%64 == 63 {
						_ = w.Ack(last)
					}
					i++
				}
				b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestStateBytesBounded: the state keeps at most a quarter of MaxBytes, so
// the events keep the rest: a new key past it is not kept, and a kept key
// whose newest event would pass it is dropped, never left at an older
// value.
func TestStateBytesBounded(t *testing.T) {
	t.Parallel()
	w := spOpen(t, t.TempDir(), &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes})
	big := func(k string, n int) string { return k + "=" + string(bytes.Repeat([]byte{'x'}, n)) }
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		stKeyed(t, w, big(k, 30<<10)) // 10 x 30 KiB against 256 KiB: the ninth is past it
	}
	st := w.Stats()
	require.EqualValues(t, 8, st.StateKeys)
	require.EqualValues(t, 2, st.StateRefused)
	stKeyed(t, w, big("a", 60<<10)) // a would take the state past the bound
	es := stState(t, w, 1<<40)
	require.Len(t, es, 7)
	for _, e := range es {
		require.False(t, strings.HasPrefix(e, "a="), "a is dropped, not left at its older value")
	}
	require.EqualValues(t, 3, w.Stats().StateRefused)
	stKeyed(t, w, big("a", 10<<10))
	require.Len(t, stState(t, w, 1<<40), 8, "room again for a smaller one")
}
