package emitter

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// Every kind of loss has its lines: this run's, and the next start's for
// what a killed run did not report.
func TestLossKindsHaveTheirLines(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for k, row := range lossKinds {
		require.NotEmpty(t, row.name, "kind %d", k)
		require.False(t, names[row.name], "%s: one row a kind", row.name)
		names[row.name] = true
		require.NotEmpty(t, row.msg, row.name)
		require.NotEmpty(t, row.count, row.name)
		require.Equal(t, 1, strings.Count(row.prev, "%d"), row.name)
	}
}

// The events of each kind its loser notes are logged at once, then held
// back (rate-limited), then logged at Close with final=true: the lines add
// up, and all of it is recorded as reported.
func TestLossLinesAddUp(t *testing.T) {
	t.Parallel()
	for k, row := range lossKinds {
		if row.polled {
			continue // the spool counts them: see lostkinds_test.go
		}
		t.Run(row.name, func(t *testing.T) {
			var out bytes.Buffer
			spool, err := wal.Open(filepath.Join(t.TempDir(), "spool"), &wal.Options{NoSync: true})
			require.NoError(t, err)
			defer spool.Close()
			o, err := (&Options{Logger: slog.New(slog.NewJSONHandler(&out, nil)), WarnInterval: time.Hour}).withDefaults()
			require.NoError(t, err)
			l, _ := newLosses(spool, &o, 0)
			l.note(ledger.Kind(k), 2, false)
			l.note(ledger.Kind(k), 3, false)
			l.final()

			var lines []map[string]any
			for _, s := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var line map[string]any
				require.NoError(t, json.Unmarshal([]byte(s), &line))
				if line["msg"] == row.msg {
					lines = append(lines, line)
				}
			}
			require.Len(t, lines, 2, "the first at once, the rest at Close")
			require.EqualValues(t, 2, lines[0][row.count])
			require.EqualValues(t, 3, lines[1][row.count])
			require.Equal(t, true, lines[1]["final"])
			require.EqualValues(t, 5, l.kinds[k].here.Load())
			total, reported := ledger.Reported(spool)
			require.Equal(t, total, reported, "all reported")
		})
	}
}
