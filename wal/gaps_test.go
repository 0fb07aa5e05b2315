package wal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The unreadable events of a salvage are named by their numbers, in ranges,
// at most maxGaps of them.
func TestSalvageGaps(t *testing.T) {
	t.Parallel()
	seen := map[uint64]struct{}{2: {}, 3: {}, 7: {}}
	require.Equal(t, []SeqRange{{1, 1}, {4, 6}, {8, 9}}, gaps(seen, 1, 10))
	require.Empty(t, gaps(seen, 2, 4), "nothing missing")

	every := map[uint64]struct{}{}
	for seq := uint64(1); seq <= 100; seq += 2 {
		every[seq] = struct{}{} // every other number: 50 gaps of one
	}
	g := gaps(every, 1, 101)
	require.Len(t, g, maxGaps)
	require.Equal(t, SeqRange{2 * maxGaps, 100}, g[maxGaps-1], "the last range runs to the newest missing number")
	r := &SalvageReport{Unreadable: g[:2]}
	require.Equal(t, "2 4", r.UnreadableSeqs())
	r.Unreadable = []SeqRange{{4, 6}}
	require.Equal(t, "4-6", r.UnreadableSeqs())
}
