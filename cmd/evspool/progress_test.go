package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Started on a backlog of more than 10,000 events, run logs the replay's
// progress until it has caught up.
func TestRunLogsReplayProgress(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	backlog := lines("backlog", 0, 10_500)
	leaveSpooled(t, sock, spool, backlog)

	rcv := startSink(t, sock)
	p := startEnv(t, []string{progressEnv + "=20ms"}, "run", "--socket", sock, "--spool", spool)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, 0, p.wait(t, 20*time.Second), p.logs())

	logs := p.logs()
	require.Contains(t, logs, `msg="replaying backlog" pending_events=10500 oldest_seq=1`)
	require.Regexp(t, `msg="replay progress" backlog_left=\d+ pending_events=\d+ rate_events_per_second=\d+ eta=\S+ connected=true`, logs)
	require.Contains(t, logs, `msg="backlog replayed" events=10500`)
	require.Equal(t, backlog, waitLines(t, rcv, len(backlog), 5*time.Second))
}

// A backlog under the threshold replays quietly.
func TestRunSmallBacklogQuiet(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	leaveSpooled(t, sock, spool, lines("small", 0, 50))
	startSink(t, sock)
	p := startEnv(t, []string{progressEnv + "=10ms"}, "run", "--socket", sock, "--spool", spool)
	require.NoError(t, p.stdin.Close())
	require.Equal(t, 0, p.wait(t, 10*time.Second), p.logs())
	require.NotContains(t, p.logs(), "replay")
}
