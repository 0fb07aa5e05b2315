package demo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEventsUniqueAndRealShaped(t *testing.T) {
	tpl := templates()
	require.Greater(t, len(tpl), 40, "the shipped PTP lines")
	seen := map[string]bool{}
	for i := range 5000 {
		ev := event(tpl, i)
		require.False(t, seen[ev], "event %d repeats: %s", i, ev)
		require.Regexp(t, `^[A-Za-z0-9_-]+\[\d+\.\d{3}\]`, ev)
		seen[ev] = true
	}
	require.Equal(t, "ptp4l[1095550.000]: [ptp4l.0.config] master offset         52 s2 freq   -1535 path delay        91", event(tpl, 0))
}

func TestSideWithGaps(t *testing.T) {
	sent := []string{"a", "b", "c", "d", "e"}
	tests := map[string]struct {
		got  []string
		want Side
	}{
		"all":       {[]string{"a", "b", "c", "d", "e"}, Side{Received: 5, Unique: 5, InOrder: true}},
		"gaps":      {[]string{"a", "c", "e"}, Side{Received: 3, Unique: 3, Lost: 2, InOrder: true}},
		"duplicate": {[]string{"a", "b", "b", "c", "d", "e"}, Side{Received: 6, Unique: 5, Duplicates: 1, InOrder: true}},
		"reordered": {[]string{"a", "c", "b", "d", "e"}, Side{Received: 5, Unique: 5, InOrder: false}},
		"foreign":   {[]string{"a", "x"}, Side{Received: 2, Unique: 1, Lost: 4, InOrder: false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.Equal(t, tc.want, sideWithGaps(sent, tc.got))
		})
	}
}
