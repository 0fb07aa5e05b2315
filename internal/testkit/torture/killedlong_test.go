package torture

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/verify"
)

// leakyReceiver reads like cloud-event-proxy, in this process: a goroutine
// a connection, a default bufio.Scanner, each line handled before the next
// is scanned; a connection whose scanner failed (a line over 64 KiB) is left
// open and sent on failed, for the test to close as Go's finalizer would at
// a garbage collection, the process staying up.
type leakyReceiver struct {
	failed chan net.Conn
	mu     sync.Mutex
	lines  []string
}

func startLeakyReceiver(t *testing.T, sock string) *leakyReceiver {
	r := &leakyReceiver{failed: make(chan net.Conn, 16)}
	serveEach(t, sock, r.serve)
	return r
}

// serveEach listens on the Unix socket sock until the test ends and serves
// each connection in a goroutine of its own, as cloud-event-proxy does.
func serveEach(t *testing.T, sock string, serve func(net.Conn)) {
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
}

func (r *leakyReceiver) serve(c net.Conn) {
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		time.Sleep(100 * time.Microsecond) // handling it
		r.mu.Lock()
		r.lines = append(r.lines, sc.Text())
		r.mu.Unlock()
	}
	if sc.Err() != nil {
		r.failed <- c
		return
	}
	c.Close()
}

func (r *leakyReceiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// evspool run is SIGKILLed with a 70,000-byte line (let through by a raised
// --max-event-size) written to a cloud-event-proxy-like receiver, whose
// scanner failed on it; the connection is then closed as a garbage
// collection would, the receiver staying up. The next start resends what
// the killed one did not see handled: the long line is set aside, never
// taken as delivered, and nothing else is lost.
func TestLongLineAfterEvspoolKill(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "ad")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock, spool := filepath.Join(dir, "s.sock"), filepath.Join(dir, "spool")
	rcv := startLeakyReceiver(t, sock)
	evs := precisionEvents(600)
	long := "long " + strings.Repeat("x", 70000)
	args := []string{"run", "--socket", sock, "--spool", spool, "--fsync=false", "--max-event-size", "128KiB"}

	c := startChild(t, binary, nil, args...)
	var in strings.Builder
	for i, ev := range evs {
		if i == 300 {
			fmt.Fprintln(&in, long)
		}
		fmt.Fprintln(&in, ev)
	}
	_, err = c.stdin.Write([]byte(in.String()))
	require.NoError(t, err)
	var failed net.Conn
	select {
	case failed = <-rcv.failed:
	case <-time.After(20 * time.Second):
		t.Fatal("the receiver's scanner did not fail on the long line")
	}
	require.Eventually(t, func() bool { return len(c.lines()) == 601 }, 20*time.Second, time.Millisecond, "all echoed")
	c.kill()
	require.NoError(t, failed.Close()) // the garbage collection's close

	c2 := startChild(t, binary, nil, append(args, "--write-timeout", "1s", "--drain-timeout", "30s")...)
	c2.stdin.Close()
	code := c2.exitCode(t, 2*time.Minute)
	res := verify.Check(evs, rcv.got())
	dl := deadLetters(spool)
	fate := "lost: taken as handled"
	switch {
	case dl > 0:
		fate = "set aside"
	case spooledEvents(t, spool) > 0:
		fate = "still spooled"
	}
	logs := c2.logs()
	t.Logf("long line after evspool's SIGKILL: exit %d, long line %s (dead letters %d), others %v; final log line: %s",
		code, fate, dl, res, lastLine(logs))
	assert.NotEqual(t, "lost: taken as handled", fate, logs)
	assert.Zero(t, res.Missing, "lost: %v\n%s", res, logs)
	assert.NotEqual(t, 0, code, "a line not delivered never exits 0: %s", logs)
}
