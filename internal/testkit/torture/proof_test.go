package torture

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

// Removal on proof only: a restarted evspool takes nothing its predecessor
// wrote as handled. Each case stops evspool (SIGKILL, or SIGTERM) with
// lines written to a receiver that then loses some of them while it, or its
// listener, lives on; the next start must resend them. Each asserts 0 lost,
// in order, exit 0, and logs the duplicates.

// handOnReceiver reads like cloud-event-proxy in this process: a goroutine
// a connection, a default bufio.Scanner, PerLine to handle each line. Of a
// reader that hands its connection on to a worker that then dies, evspool
// sees the connection closed with lines unread while the listener lives:
// drop does that to every open connection. A living reader that rejects a
// line (one containing reject) closes its connection there, with what it
// read after it unhandled, and goes on serving.
type handOnReceiver struct {
	perLine time.Duration
	reject  string
	mu      sync.Mutex
	lines   []string
	conns   map[net.Conn]bool // open connections; false once dropped
}

func startHandOnReceiver(t *testing.T, sock string, perLine time.Duration, reject string) *handOnReceiver {
	r := &handOnReceiver{perLine: perLine, reject: reject, conns: map[net.Conn]bool{}}
	serveEach(t, sock, r.serve)
	return r
}

func (r *handOnReceiver) serve(c net.Conn) {
	r.mu.Lock()
	r.conns[c] = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.conns[c] = false
		r.mu.Unlock()
		c.Close()
	}()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		line := sc.Text()
		if r.reject != "" && strings.Contains(line, r.reject) {
			return // rejected: the rest of what it read is dropped
		}
		time.Sleep(r.perLine) // handling it
		r.mu.Lock()
		live := r.conns[c]
		if live {
			r.lines = append(r.lines, line)
		}
		r.mu.Unlock()
		if !live {
			return // its worker died: what it had read goes with it
		}
	}
}

// drop closes every connection with what it holds unread, the receiver
// staying up: a worker that died, or a reader that dropped it.
func (r *handOnReceiver) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.conns {
		r.conns[c] = false
		c.Close()
	}
}

// open is how many connections it still reads.
func (r *handOnReceiver) open() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, live := range r.conns {
		if live {
			n++
		}
	}
	return n
}

func (r *handOnReceiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// proofRun writes evs[:n] to a first evspool run, waits until at least
// handled lines are handled, stops it with sig, applies fault, then a second
// run delivers the rest; it returns the second run's exit status and logs.
func proofRun(t *testing.T, sock, spool string, evs []string, n, handled int, got func() []string,
	sig syscall.Signal, fault func()) (int, string) {
	t.Helper()
	args := []string{"run", "--socket", sock, "--spool", spool, "--fsync=false"}
	c := startChild(t, binary, nil, args...)
	_, err := c.stdin.Write([]byte(strings.Join(evs[:n], "\n") + "\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(c.lines()) == n && len(got()) >= handled }, 30*time.Second, time.Millisecond,
		"echoed %d, handled %d", len(c.lines()), len(got()))
	if sig == syscall.SIGKILL {
		c.kill()
	} else {
		require.NoError(t, c.cmd.Process.Signal(sig))
		<-c.done
	}
	fault()
	c2 := startChild(t, binary, nil, append(args, "--drain-timeout", "60s")...)
	go func() {
		_, _ = c2.stdin.Write([]byte(strings.Join(evs[n:], "\n") + "\n"))
		c2.stdin.Close()
	}()
	code := c2.exitCode(t, 2*time.Minute)
	return code, c2.logs()
}

func TestProofAfterEvspoolStops(t *testing.T) {
	const total, first = 3000, 1000
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		reject bool
	}{
		{"handing-on reader, SIGKILL", syscall.SIGKILL, false},
		{"living reader drops the connection, SIGKILL", syscall.SIGKILL, true},
		{"living reader drops the connection, SIGTERM", syscall.SIGTERM, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := os.MkdirTemp("", "pr")
			require.NoError(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			sock, spool := filepath.Join(dir, "s.sock"), filepath.Join(dir, "spool")
			evs := precisionEvents(total)
			reject, bad := "", first-300
			if tc.reject {
				// A line the reader rejects, written before evspool
				// stopped and reached after: it drops the connection with
				// what it read after the line unhandled.
				evs[bad] = "REJECT " + evs[bad]
				reject = "REJECT"
			}
			rcv := startHandOnReceiver(t, sock, time.Millisecond, reject)
			code, logs := proofRun(t, sock, spool, evs, first, 20, rcv.got, tc.sig, func() {
				if !tc.reject {
					rcv.drop()
					return
				}
				require.Eventually(t, func() bool { return rcv.open() == 0 }, 30*time.Second, time.Millisecond,
					"the reader dropped the connection at the rejected line")
			})
			got := rcv.got()
			want := evs
			if tc.reject {
				// The rejected line is dropped by every connection it
				// reaches and set aside in the end; the others must all
				// arrive.
				want = append(append([]string(nil), evs[:bad]...), evs[bad+1:]...)
			}
			res := verify.Check(want, got)
			t.Logf("%s: exit %d, %d handled of %d, %v; final log line: %s", tc.name, code, len(got), len(want), res, lastLine(logs))
			assert.Zero(t, res.Missing, "lost: %v\n%s", res, logs)
			assert.True(t, res.OK(), res.String())
			if !tc.reject {
				assert.Equal(t, 0, code, logs)
			} else {
				assert.Equal(t, 4, code, "the rejected line is set aside, a loss: %s", logs)
			}
		})
	}
}

// A receiver that re-executes itself (CMD RESTART on a connection of its
// own, as linuxptp-daemon sends it) with address randomisation off: the
// same pid, start time and stack after the exec. evspool was SIGKILLed with
// lines written that the old image had not handled: they are resent.
func TestProofReexecWithoutASLR(t *testing.T) {
	t.Parallel()
	r := newCEPRig(t, refrecv.CEPConfig{PerLine: time.Millisecond, NoASLR: true})
	evs := precisionEvents(3000)
	code, logs := proofRun(t, r.sock, r.spool, evs, 1000, 20, r.rcv.Lines, syscall.SIGKILL, func() {
		starts := r.rcv.Starts()
		c, err := net.Dial("unix", r.sock)
		require.NoError(t, err)
		fmt.Fprintln(c, refrecv.DefaultRestartLine)
		c.Close()
		require.Eventually(t, func() bool { return r.rcv.Starts() > starts }, 20*time.Second, 10*time.Millisecond, "re-executed")
	})
	res := verify.Check(evs, r.rcv.Lines())
	t.Logf("re-exec without ASLR after evspool's SIGKILL: exit %d, %v; final log line: %s", code, res, lastLine(logs))
	assert.Zero(t, res.Missing, "lost: %v\n%s", res, logs)
	assert.True(t, res.OK(), res.String())
	assert.Equal(t, 0, code, logs)
}

// A burst read and acknowledged (past the linger), then evspool and the
// receiver SIGKILLed within milliseconds: what was acknowledged stays
// acknowledged (the marks file has it, and a kill keeps the page cache), so
// the next start resends none of it.
func TestProofDoubleKill(t *testing.T) {
	t.Parallel()
	r := newCEPRig(t, refrecv.CEPConfig{PerLine: 100 * time.Microsecond})
	evs := precisionEvents(400)
	metrics := freeTCPAddr(t)
	c := r.run("unix", "--replay-linger", "200ms", "--metrics-addr", metrics)
	_, err := c.stdin.Write([]byte(strings.Join(evs[:200], "\n") + "\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(r.rcv.Lines()) == 200 }, 20*time.Second, time.Millisecond, "handled")
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), "\nevspool_events_delivered_total 200\n")
	}, 20*time.Second, 10*time.Millisecond, "acknowledged once the linger passed")
	c.kill()
	r.rcv.Kill()
	require.NoError(t, r.rcv.Restart())
	c2 := r.run("unix", "--drain-timeout", "30s")
	_, err = c2.stdin.Write([]byte(strings.Join(evs[200:], "\n") + "\n"))
	require.NoError(t, err)
	c2.stdin.Close()
	code := c2.exitCode(t, time.Minute)
	res := verify.Check(evs, r.rcv.Lines())
	seen := map[string]int{}
	var again []int
	for _, l := range r.rcv.Lines() {
		if seen[l]++; seen[l] == 2 {
			again = append(again, eventID(l))
		}
	}
	t.Logf("double kill after an acknowledged burst: exit %d, %v; resent %v", code, res, again)
	assert.True(t, res.OK(), res.String())
	assert.Zero(t, res.Duplicates, "acknowledged before the kills: none resent")
	assert.Equal(t, 0, code, c2.logs())
}
