package verify

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	sent := []string{"a", "b", "c", "d"}
	tests := []struct {
		name                                    string
		got                                     []string
		ok                                      bool
		missing, duplicates, reordered, foreign int
	}{
		{"exact", []string{"a", "b", "c", "d"}, true, 0, 0, 0, 0},
		{"contiguous replay", []string{"a", "b", "c", "b", "c", "d"}, true, 0, 2, 0, 0},
		{"replay from start", []string{"a", "b", "a", "b", "c", "d"}, true, 0, 2, 0, 0},
		{"missing tail", []string{"a", "b"}, false, 2, 0, 0, 0},
		{"gap", []string{"a", "c", "d"}, false, 1, 0, 1, 0},
		{"swap", []string{"a", "c", "b", "d"}, false, 0, 0, 2, 0},
		{"replay that skips", []string{"a", "b", "c", "a", "c", "d"}, false, 0, 2, 1, 0},
		{"foreign line", []string{"a", "b", "x", "c", "d"}, false, 0, 0, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Check(sent, tt.got)
			require.Equal(t, tt.ok, r.OK(), r.String())
			require.Equal(t, tt.missing, r.Missing, "missing")
			require.Equal(t, tt.duplicates, r.Duplicates, "duplicates")
			require.Equal(t, tt.reordered, r.Reordered, "reordered")
			require.Equal(t, tt.foreign, r.Foreign, "foreign")
		})
	}
}

// A resend on a new connection handled beside the end of the old one: the
// first arrivals stay in order (InOrder), the replay is not contiguous
// (not OK), and the lines that jumped ahead of it are counted interleaved.
func TestCheckInterleaved(t *testing.T) {
	t.Parallel()
	sent := []string{"a", "b", "c", "d", "e"}
	r := Check(sent, []string{"a", "b", "c", "a", "d", "b", "e", "c"})
	require.False(t, r.OK(), r.String())
	require.True(t, r.InOrder(), r.String())
	require.Equal(t, 3, r.Duplicates)
	require.Equal(t, 2, r.Interleaved, "d and e jumped ahead of the replay")
	require.Equal(t, 2, r.Reordered)

	r = Check(sent, []string{"a", "c", "a", "b", "d", "e"})
	require.False(t, r.InOrder(), "c first arrived before b: %s", r)
	require.Equal(t, 1, r.Interleaved, "d, after the replay of a and b")
}
