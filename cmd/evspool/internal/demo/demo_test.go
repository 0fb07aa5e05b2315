package demo

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEventsUniqueAndRealShaped(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

func TestReplaysAttributed(t *testing.T) {
	t.Parallel()
	faults := []fault{
		{"receiver crash", 3, 3},  // a b c received, then the crash
		{"evspool SIGKILL", 4, 3}, // while the receiver is down: same replay
		{"evspool SIGKILL", 7, 6},
		{"receiver crash", 8, 9}, // nothing resent after it
	}
	got := []string{"a", "b", "c", "b", "c", "d", "d", "e", "f", "g"}
	require.Equal(t, []Replay{
		{After: "the receiver crash at 3.0s and the evspool SIGKILL at 4.0s", Duplicates: 2},
		{After: "the evspool SIGKILL at 7.0s", Duplicates: 1},
	}, replays(faults, got))
}
