package emitter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/clocktest"
)

func TestReporter(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	r := reporter{clk: clk, interval: 30 * time.Second}

	// Occurrences: the first at once, then one per interval with the
	// ones left out.
	require.True(t, r.occurred())
	_, left := r.take()
	require.Zero(t, left)
	for range 4 {
		clk.Advance(time.Second)
		require.False(t, r.occurred())
	}
	clk.Advance(26 * time.Second)
	require.True(t, r.occurred())
	_, left = r.take()
	require.Equal(t, 4, left, "the four left out are counted")

	// Losses: none is nothing to report, however long; the first at once,
	// then the sum per interval; final takes the rest at any time.
	r = reporter{clk: clk, interval: 30 * time.Second}
	require.False(t, r.lost(0, false))
	clk.Advance(time.Hour)
	require.False(t, r.lost(0, true), "nothing lost: no final line")
	require.True(t, r.lost(3, false))
	n, _ := r.take()
	require.EqualValues(t, 3, n)
	clk.Advance(time.Second)
	require.False(t, r.lost(5, false))
	clk.Advance(time.Second)
	require.False(t, r.lost(7, false))
	clk.Advance(time.Second)
	require.True(t, r.lost(0, true))
	n, _ = r.take()
	require.EqualValues(t, 12, n, "the lines add up to the total")
}
