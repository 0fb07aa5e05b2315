package ledger

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/testkit/clocktest"
)

func TestReporter(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	r := Reporter{Now: clk.Now, Interval: 30 * time.Second}

	// Occurrences: the first at once, then one per interval with the
	// ones left out.
	require.True(t, r.Occurred())
	_, left := r.Take()
	require.Zero(t, left)
	for range 4 {
		clk.Advance(time.Second)
		require.False(t, r.Occurred())
	}
	clk.Advance(26 * time.Second)
	require.True(t, r.Occurred())
	_, left = r.Take()
	require.Equal(t, 4, left, "the four left out are counted")

	// Losses: none is nothing to report, however long; the first at once,
	// then the sum per interval; final takes the rest at any time.
	r = Reporter{Now: clk.Now, Interval: 30 * time.Second}
	require.False(t, r.Lost(0, false))
	clk.Advance(time.Hour)
	require.False(t, r.Lost(0, true), "nothing lost: no final line")
	require.True(t, r.Lost(3, false))
	n, _ := r.Take()
	require.EqualValues(t, 3, n)
	clk.Advance(time.Second)
	require.False(t, r.Lost(5, false))
	clk.Advance(time.Second)
	require.False(t, r.Lost(7, false))
	clk.Advance(time.Second)
	require.True(t, r.Lost(0, true))
	n, _ = r.Take()
	require.EqualValues(t, 12, n, "the lines add up to the total")
}
