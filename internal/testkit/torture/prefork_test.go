package torture

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

// A pre-fork receiver: its master listens (SO_PEERCRED names it), a worker
// accepts and reads. evspool run is SIGKILLed with 1,000 events written to
// the worker, which then dies with most of them unread; the master starts a
// new worker. The next run must resend what the dead worker had not
// handled: the master still being alive proves nothing about the reader.
func TestPreForkWorkerKilled(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "pf")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock, spool := filepath.Join(dir, "s.sock"), filepath.Join(dir, "spool")
	p, err := refrecv.StartPreFork(refrecv.PreForkConfig{Addr: sock, Out: filepath.Join(dir, "handled"), PerLine: time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(p.Kill)
	evs := precisionEvents(3000)
	args := []string{"run", "--socket", sock, "--spool", spool, "--fsync=false"}

	c := startChild(t, binary, nil, args...)
	_, err = c.stdin.Write([]byte(strings.Join(evs[:1000], "\n") + "\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(c.lines()) == 1000 && len(p.Lines()) >= 20 }, 20*time.Second, time.Millisecond,
		"echoed %d, handled %d", len(c.lines()), len(p.Lines()))
	c.kill()
	require.NoError(t, p.KillWorker())
	handled := len(p.Lines())
	require.Less(t, handled, 1000, "the worker died with lines unread")

	c2 := startChild(t, binary, nil, append(args, "--drain-timeout", "30s")...)
	go func() {
		_, _ = c2.stdin.Write([]byte(strings.Join(evs[1000:], "\n") + "\n"))
		c2.stdin.Close()
	}()
	code := c2.exitCode(t, time.Minute)
	res := verify.Check(evs, p.Lines())
	logs := c2.logs()
	t.Logf("pre-fork worker killed after evspool's SIGKILL (%d of 1,000 handled): exit %d, %v; final log line: %s",
		handled, code, res, lastLine(logs))
	assert.Zero(t, res.Missing, "lost: %v\n%s", res, logs)
	assert.True(t, res.OK(), res.String())
	assert.Equal(t, 0, code, logs)
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
