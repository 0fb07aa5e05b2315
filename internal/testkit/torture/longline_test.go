package torture

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

// TestCEPLongLineClosedAtGC: a line over cloud-event-proxy's 64 KiB limit,
// let through by --max-event-size, against the proxy's receive loop as it
// is: its scanner fails, it stops reading that connection and the garbage
// collector closes it (every second here) while the process stays up. The
// long line is set aside and nothing else, the event before it is
// delivered, and the events after it are delivered without waiting for the
// drain timeout.
func TestCEPLongLineClosedAtGC(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		gc    time.Duration
		extra []string
	}{
		// Closed before anything it read has lingered (ReplayLinger, 2 s).
		"collected every second": {time.Second, nil},
		// cloud-event-proxy's forced GC every 2 minutes: the connection
		// stays open, and evspool sees the receiver stuck inside the line.
		"never collected": {-1, []string{"--write-timeout", "1s"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			longLineRun(t, name, tc.gc, tc.extra...)
		})
	}
}

func longLineRun(t *testing.T, name string, gc time.Duration, extra ...string) {
	r := newCEPRig(t, refrecv.CEPConfig{GCInterval: gc})
	evs := precisionEvents(600)
	const at = 100 // the long line comes before evs[at]
	long := "long " + strings.Repeat("x", 70000-5)
	c := r.run("unix", append([]string{"--max-event-size", "128KiB", "--drain-timeout", "60s"}, extra...)...)
	var in strings.Builder
	for i, ev := range evs {
		if i == at {
			fmt.Fprintln(&in, long)
		}
		fmt.Fprintln(&in, ev)
	}
	_, err := c.stdin.Write([]byte(in.String()))
	require.NoError(t, err)
	c.stdin.Close()
	begin := time.Now()
	waited := time.Duration(-1)
	for waited < 0 {
		if slices.Contains(r.rcv.Lines(), evs[len(evs)-1]) {
			waited = time.Since(begin)
			break
		}
		select {
		case <-c.done:
			waited = time.Since(begin) // exited: the events after it are in or never will be
		case <-time.After(10 * time.Millisecond): // polling the receiver's record
		}
	}
	code := c.exitCode(t, 2*time.Minute)
	res := verify.Check(evs, r.rcv.Lines())
	dl, _ := os.ReadFile(filepath.Join(r.spool, "dead-letters"))
	t.Logf("long line, %s: exit %d, the events after it waited %v, dead letters %d, receiver restarts %d, %v",
		name, code, waited.Round(10*time.Millisecond), deadLetters(r.spool), r.rcv.Starts()-1, res)
	assert.True(t, res.OK(), "%v\nlogs:\n%s", res, c.logs())
	assert.Equal(t, 4, code, "the long line is a loss, and nothing is left spooled: %s", c.logs())
	assert.Equal(t, 1, deadLetters(r.spool), "only the long line is set aside: %s", c.logs())
	assert.Contains(t, string(dl), long)
	assert.Zero(t, r.rcv.Starts()-1, "the receiver never restarts")
}
