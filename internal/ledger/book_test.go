package ledger

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// Every kind of loss has its lines: this run's, and the next start's for
// what a killed run did not report (the kinds the spool records).
func TestKindsHaveTheirLines(t *testing.T) {
	names := map[string]bool{}
	for k, ln := range lines {
		require.NotEmpty(t, ln.name, "kind %d", k)
		require.False(t, names[ln.name], "%s: one row a kind", ln.name)
		names[ln.name] = true
		if Kind(k) == DeadLettered {
			require.Empty(t, ln.msg, "logged where it is set aside")
			continue
		}
		require.NotEmpty(t, ln.msg, ln.name)
		require.NotEmpty(t, ln.count, ln.name)
		if Kind(k) < recorded {
			require.Equal(t, 1, strings.Count(ln.prev, "%d"), ln.name)
		} else {
			require.Empty(t, ln.prev, "%s: not recorded, so no next start reports it", ln.name)
		}
	}
}

// openBook opens a Book on a new spool, logging JSON lines to out.
func openBook(t *testing.T, out *bytes.Buffer) (*Book, *wal.WAL) {
	t.Helper()
	b := New(Config{Logger: slog.New(slog.NewJSONHandler(out, nil)), Interval: time.Hour})
	spool, err := wal.Open(filepath.Join(t.TempDir(), "spool"), &wal.Options{NoSync: true, OnLoss: b.Lost})
	require.NoError(t, err)
	t.Cleanup(func() { spool.Close() })
	b.Open(spool, 0)
	return b, spool
}

// linesOf are the JSON lines of out whose msg is msg.
func linesOf(t *testing.T, out *bytes.Buffer, msg string) []map[string]any {
	t.Helper()
	var got []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if s == "" {
			continue
		}
		var line map[string]any
		require.NoError(t, json.Unmarshal([]byte(s), &line))
		if line["msg"] == msg {
			got = append(got, line)
		}
	}
	return got
}

// The events of each kind its loser notes are logged at once, then held
// back (rate-limited), then logged at Final with final=true: the lines add
// up, and all of it is recorded as reported.
func TestLossLinesAddUp(t *testing.T) {
	for k, ln := range lines {
		if ln.msg == "" {
			continue
		}
		t.Run(ln.name, func(t *testing.T) {
			var out bytes.Buffer
			b, spool := openBook(t, &out)
			b.Note(Kind(k), 2)
			b.Note(Kind(k), 3)
			b.Tick() // within the interval: nothing
			b.Final()

			got := linesOf(t, &out, ln.msg)
			require.Len(t, got, 2, "the first at once, the rest at Final")
			require.EqualValues(t, 2, got[0][ln.count])
			require.EqualValues(t, 3, got[1][ln.count])
			require.Equal(t, true, got[1]["final"])
			require.EqualValues(t, 5, b.Since()[k])
			if Kind(k) < recorded {
				_, reported := Reported(spool)
				require.EqualValues(t, 5, reported[k], "all recorded as reported")
			}
		})
	}
}

// Refused events are recorded in the spool with what was reported of them:
// a killed process's next start reports the rest, and the count survives.
func TestRefusedRecordedAndReportedOnce(t *testing.T) {
	var out bytes.Buffer
	b, spool := openBook(t, &out)
	require.True(t, ReportedKnown(spool), "a new spool lost nothing: nothing to take as reported")
	b.Note(Refused, 2) // logged at once
	b.Note(Refused, 3) // held back; the process is killed before Final
	total, reported := Reported(spool)
	require.Equal(t, Losses{Refused: 5}, total, "recorded before logged")
	require.Equal(t, Losses{Refused: 2}, reported)
	dir := spool.Dir()
	require.NoError(t, spool.Close())

	out.Reset()
	b = New(Config{Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	spool, err := wal.Open(dir, &wal.Options{NoSync: true, OnLoss: b.Lost})
	require.NoError(t, err)
	defer spool.Close()
	b.Open(spool, 0)
	got := linesOf(t, &out, "the previous run refused 3 lines (over the size limit, or not a line) and did not report it")
	require.Len(t, got, 1)
	require.EqualValues(t, 3, got[0]["unreported_events"])
	require.Equal(t, Losses{Refused: 3}, b.Since(), "this process reports the 3")
	total, reported = Reported(spool)
	require.Equal(t, total, reported, "and records them reported")
}

// What a commit drops is a value the spool hands over (OnLoss), counted
// once, logged by Tick, and recorded as reported once logged.
func TestDropsCountedFromTheirCommit(t *testing.T) {
	var out bytes.Buffer
	b := New(Config{Logger: slog.New(slog.NewJSONHandler(&out, nil)), Interval: time.Hour})
	spool, err := wal.Open(t.TempDir(), &wal.Options{NoSync: true, MaxBytes: wal.MinMaxBytes, OnLoss: b.Lost})
	require.NoError(t, err)
	defer spool.Close()
	b.Open(spool, 0)
	ev := bytes.Repeat([]byte("d"), 1000)
	for spool.Stats().DroppedOldest.Events == 0 {
		_, err := spool.Append(t.Context(), ev, ev, ev)
		require.NoError(t, err)
	}
	require.Equal(t, spool.Stats().DroppedOldest.Events, b.Total()[DroppedOldest], "counted in the commit that dropped them")
	require.Empty(t, linesOf(t, &out, "spool full: oldest events dropped to make room"), "the spool's lock was held: not logged yet")
	b.Tick()
	got := linesOf(t, &out, "spool full: oldest events dropped to make room")
	require.Len(t, got, 1)
	require.EqualValues(t, b.Total()[DroppedOldest], got[0]["dropped_events"])
	_, reported := Reported(spool)
	require.Equal(t, b.Total()[DroppedOldest], reported[DroppedOldest])
}

// TestOpenRecordsZeros: on a spool that records nothing yet, Open
// still records the counts, so that the next process knows they were kept
// (and reports what is lost meanwhile).
func TestOpenRecordsZeros(t *testing.T) {
	var out bytes.Buffer
	_, spool := openBook(t, &out)
	_, known, err := loadReported(spool)
	require.NoError(t, err)
	require.True(t, known)
}
