package emitter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReporter(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	// Occurrences: the first at once, then one per interval with the
	// ones left out.
	r := reporter{interval: 30 * time.Second}
	require.True(t, r.occurred(at(0)))
	_, left := r.take(at(0))
	require.Zero(t, left)
	for i := range 4 {
		require.False(t, r.occurred(at(time.Duration(i+1)*time.Second)))
	}
	require.True(t, r.occurred(at(30*time.Second)))
	_, left = r.take(at(30 * time.Second))
	require.Equal(t, 4, left, "the four left out are counted")

	// Losses: none is nothing to report, however long; the first at once,
	// then the sum per interval; final takes the rest at any time.
	r = reporter{interval: 30 * time.Second}
	require.False(t, r.lost(at(0), 0, false))
	require.False(t, r.lost(at(time.Hour), 0, true), "nothing lost: no final line")
	require.True(t, r.lost(at(time.Hour), 3, false))
	n, _ := r.take(at(time.Hour))
	require.EqualValues(t, 3, n)
	require.False(t, r.lost(at(time.Hour+time.Second), 5, false))
	require.False(t, r.lost(at(time.Hour+2*time.Second), 7, false))
	require.True(t, r.lost(at(time.Hour+3*time.Second), 0, true))
	n, _ = r.take(at(time.Hour + 3*time.Second))
	require.EqualValues(t, 12, n, "the lines add up to the total")
}
