package torture

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/verify"
)

// Precision: what evspool resends, sets aside and reconnects
// beyond what a fault makes necessary, against the cloud-event-proxy-like
// receiver child. Each test prints its figures ("precision: ..."); the long
// variants (make torture) are the figures docs/delivery.md quotes; they run only there, as
// make test must stay fast (the emitter's delivery tests cover the same
// decisions without a socket).

// skipShort skips a precision test outside make torture.
func skipShort(t *testing.T) {
	t.Helper()
	if !long() {
		t.Skip("a measurement that takes tens of seconds: make torture (EVSPOOL_TORTURE=long)")
	}
}

// produceFrom writes evs[from:] to c's stdin at rate a second until stop is
// closed (then it returns the index reached) or the end (then it closes
// stdin).
func produceFrom(c *child, evs []string, from int, rate float64, stop <-chan struct{}) int {
	start := time.Now()
	for i := from; i < len(evs); i++ {
		if d := time.Until(start.Add(time.Duration(float64(i-from) / rate * float64(time.Second)))); d > 0 {
			select {
			case <-stop:
				return i
			case <-time.After(d): // pacing a producer, not waiting for a condition
			}
		}
		fmt.Fprintln(c.stdin, evs[i])
	}
	c.stdin.Close()
	return len(evs)
}

func precisionEvents(n int) []string {
	evs := make([]string, n)
	for i := range evs {
		evs[i] = event(i) // 100 bytes with the newline
	}
	return evs
}

// TestPrecisionReceiverKills: duplicates per receiver kill, at 500 and 1,000
// events a second of 100-byte lines (target: one 4 KiB read, ~45).
func TestPrecisionReceiverKills(t *testing.T) {
	skipShort(t)
	seconds, kills := 4, 3
	if long() {
		seconds, kills = 20, 10
	}
	for _, rate := range []int{500, 1000} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) {
			r := newCEPRig(t, refrecv.CEPConfig{PerLine: 100 * time.Microsecond})
			evs := precisionEvents(rate * seconds)
			c := r.run("unix", "--drain-timeout", "30s")
			go produceFrom(c, evs, 0, float64(rate), nil)
			span := time.Duration(seconds) * time.Second
			for range kills {
				time.Sleep(span / time.Duration(kills+1)) // spacing kills, not waiting for something
				r.rcv.Kill()
				require.NoError(t, r.rcv.Restart())
			}
			require.Equal(t, 0, c.exitCode(t, 2*time.Minute), c.logs())
			res := verify.Check(evs, r.rcv.Lines())
			t.Logf("precision: receiver kills at %d/s: %d kills, %d duplicates, %.1f per kill; %v",
				rate, kills, res.Duplicates, float64(res.Duplicates)/float64(kills), res)
			assert.True(t, res.OK(), res.String())
			assert.LessOrEqual(t, float64(res.Duplicates)/float64(kills), 45.0, "duplicates per kill")
		})
	}
}

// TestPrecisionEvspoolKills: duplicates per SIGKILL of evspool run while
// the receiver stays up, a live stream at 100 and 1,000 events a second
// (target: at most one 4 KiB read, 45), and during a catch-up, a backlog
// draining after the receiver's return (target: 90). A restarted evspool
// takes nothing its predecessor wrote as handled: it resends what was in
// flight and the receiver's last read.
func TestPrecisionEvspoolKills(t *testing.T) {
	skipShort(t)
	for _, rate := range []int{100, 1000} {
		t.Run(fmt.Sprint(rate), func(t *testing.T) { precisionEvspoolKills(t, rate) })
	}
	t.Run("catch-up", precisionEvspoolKillsCatchUp)
}

func precisionEvspoolKills(t *testing.T, rate int) {
	seconds, kills := 4, 3
	if long() {
		seconds, kills = 20, 10
	}
	r := newCEPRig(t, refrecv.CEPConfig{PerLine: 200 * time.Microsecond})
	evs := precisionEvents(rate * seconds)
	next := 0
	for k := 0; k < kills; k++ {
		c := r.run("unix")
		stop := make(chan struct{})
		reached := make(chan int, 1)
		go func() { reached <- produceFrom(c, evs, next, float64(rate), stop) }()
		time.Sleep(time.Duration(seconds) * time.Second / time.Duration(kills+1)) // spacing kills
		close(stop)
		<-reached
		c.kill()
		next = lastEchoed(c) + 1 // what the killed run spooled is delivered by the next
	}
	c := r.run("unix", "--drain-timeout", "30s")
	go produceFrom(c, evs, next, float64(rate), nil)
	require.Equal(t, 0, c.exitCode(t, 2*time.Minute), c.logs())
	res := verify.Check(evs, r.rcv.Lines())
	t.Logf("precision: evspool kills at %d/s, receiver up: %d kills, %d duplicates, %.1f per kill, %d interleaved; %v",
		rate, kills, res.Duplicates, float64(res.Duplicates)/float64(kills), res.Interleaved, res)
	// The receiver handles the end of the old connection beside the resend
	// (docs/delivery.md, "When evspool itself dies"): interleaved, counted.
	assert.True(t, res.InOrder(), res.String())
	assert.LessOrEqual(t, float64(res.Duplicates)/float64(kills), 45.0, "duplicates per kill")
}

// precisionEvspoolKillsCatchUp spools a backlog while the receiver is down,
// brings it back and SIGKILLs evspool while the backlog drains.
func precisionEvspoolKillsCatchUp(t *testing.T) {
	n, kills := 30_000, 3
	if long() {
		n, kills = 100_000, 10
	}
	r := newCEPRig(t, refrecv.CEPConfig{}) // handling a line costs its write to the record file
	evs := precisionEvents(n)
	r.rcv.Kill()
	c := r.run("unix")
	_, err := c.stdin.Write([]byte(strings.Join(evs, "\n") + "\n"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(c.lines()) == n }, time.Minute, 10*time.Millisecond, "spooled")
	require.NoError(t, r.rcv.Restart())
	killed := 0
	for k := 0; k < kills; k++ {
		before := len(r.rcv.Lines())
		require.Eventually(t, func() bool { return len(r.rcv.Lines()) > before+2000 }, time.Minute, time.Millisecond, "draining")
		if len(r.rcv.Lines()) >= n-5000 {
			break // the backlog is nearly gone: a kill now is not during a catch-up
		}
		c.kill()
		killed++
		c = r.run("unix")
	}
	c.stdin.Close()
	require.Equal(t, 0, c.exitCode(t, 2*time.Minute), c.logs())
	res := verify.Check(evs, r.rcv.Lines())
	t.Logf("precision: evspool kills during a catch-up of %d events: %d kills, %d duplicates, %.1f per kill, %d interleaved; %v",
		n, killed, res.Duplicates, float64(res.Duplicates)/float64(max(killed, 1)), res.Interleaved, res)
	assert.True(t, res.InOrder(), res.String())
	require.Positive(t, killed, "killed during the catch-up")
	assert.LessOrEqual(t, float64(res.Duplicates)/float64(killed), 90.0, "duplicates per kill")
}

// lastEchoed is the index of the last event a run echoed (spooled).
func lastEchoed(c *child) int {
	last := -1
	for _, l := range c.lines() {
		if id := eventID(l); id > last {
			last = id
		}
	}
	return last
}

// TestPrecisionCrashLoop: a receiver that dies handling the first line it
// reads, whatever it is, for its first 9 starts, restarted 1 s later each
// time, then healthy; 1,000 events at 100/s. Target: nothing set aside.
func TestPrecisionCrashLoop(t *testing.T) {
	skipShort(t)
	const crashes = 9
	r := newCEPRig(t, refrecv.CEPConfig{CrashFirst: crashes})
	evs := precisionEvents(1000)
	c := r.run("unix", "--drain-timeout", "60s")
	go produceFrom(c, evs, 0, 100, nil)
	for r.rcv.Starts() <= crashes {
		select {
		case <-r.rcv.Exited():
		case <-time.After(30 * time.Second):
			t.Fatalf("the receiver did not crash; starts %d", r.rcv.Starts())
		}
		time.Sleep(time.Second) // its supervisor's restart delay
		require.NoError(t, r.rcv.Restart())
	}
	code := c.exitCode(t, 2*time.Minute)
	res := verify.Check(evs, r.rcv.Lines())
	dl := deadLetters(r.spool)
	t.Logf("precision: crash loop (%d crashes): exit %d, dead letters %d, %v; logs with 'crash-looping': %d",
		crashes, code, dl, res, strings.Count(c.logs(), "crash-looping"))
	assert.Zero(t, dl, "dead letters")
	assert.Equal(t, 0, code, c.logs())
	assert.True(t, res.OK(), res.String())
}

// statusReconnects reads the reconnect count from a running evspool's
// status.json.
func statusReconnects(t *testing.T, spool string) int {
	b, err := os.ReadFile(filepath.Join(spool, "status.json"))
	require.NoError(t, err)
	var st struct {
		Reconnects int `json:"reconnects"`
	}
	require.NoError(t, json.Unmarshal(b, &st))
	return st.Reconnects
}

// deadLetters counts the records in a spool's dead-letter file.
func deadLetters(spool string) int {
	b, err := os.ReadFile(filepath.Join(spool, "dead-letters"))
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "#evspool-dead-letter ")
}

// TestPrecisionFrozen (long only: the real 30 s stall timeout, a 100 s
// freeze): the receiver SIGSTOPped 100 s while 200 events a second come.
// Targets: nothing set aside, at most 2 connections opened.
func TestPrecisionFrozen(t *testing.T) {
	if !long() {
		t.Skip("a 100 s freeze: make torture (the emitter's TestFrozenReceiver does it in 3 s)")
	}
	r := newCEPRig(t, refrecv.CEPConfig{PerLine: 100 * time.Microsecond})
	evs := precisionEvents(24000)
	c := r.run("unix", "--drain-timeout", "60s")
	go produceFrom(c, evs, 0, 200, nil)
	time.Sleep(10 * time.Second) // the stream runs a while first
	require.NoError(t, r.rcv.Freeze())
	time.Sleep(100 * time.Second) // the freeze itself
	require.NoError(t, r.rcv.Thaw())
	time.Sleep(2 * time.Second) // status.json is written every second
	reconnects := statusReconnects(t, r.spool)
	code := c.exitCode(t, 5*time.Minute)
	res := verify.Check(evs, r.rcv.Lines())
	t.Logf("precision: frozen 100 s: exit %d, dead letters %d, connections opened %d, %v",
		code, deadLetters(r.spool), 1+reconnects, res)
	assert.LessOrEqual(t, 1+reconnects, 2, "connections")
	assert.Zero(t, deadLetters(r.spool))
	assert.True(t, res.OK(), res.String())
}

// TestPrecisionTCPPoison: the line that makes the receiver re-execute
// itself, over TCP, where "read" only means its kernel took the bytes: no
// event may be lost. Lost is
// neither handled nor still spooled when the run stops.
func TestPrecisionTCPPoison(t *testing.T) {
	skipShort(t)
	runs := 2
	if long() {
		runs = 5
	}
	lost, setAside := 0, 0
	for run := range runs {
		r := newCEPRig(t, refrecv.CEPConfig{Network: "tcp", PerLine: 100 * time.Microsecond})
		evs := precisionEvents(400)
		c := r.run("tcp", "--drain-timeout", "10s")
		for i, ev := range evs {
			if i == 200 {
				fmt.Fprintln(c.stdin, refrecv.DefaultRestartLine)
			}
			fmt.Fprintln(c.stdin, ev)
		}
		c.stdin.Close()
		code := c.exitCode(t, 2*time.Minute)
		r.rcv.Kill()
		res := verify.Check(evs, r.rcv.Lines())
		pending := spooledEvents(t, r.spool)
		missing := res.Missing - min(res.Missing, pending)
		lost += missing
		setAside += deadLetters(r.spool)
		t.Logf("tcp poison run %d: exit %d, receiver restarts %d, dead letters %d, still spooled %d, lost %d; %v",
			run, code, r.rcv.Starts()-1, deadLetters(r.spool), pending, missing, res)
		assert.Zero(t, missing, "lost: %v\n%s", res, c.logs())
	}
	t.Logf("precision: tcp poison: %d runs, %d events lost, %d set aside", runs, lost, setAside)
}

// spooledEvents is what evspool inspect says is pending in a spool.
func spooledEvents(t *testing.T, spool string) int {
	out, err := exec.Command(binary, "inspect", "--spool", spool, "--json").Output()
	require.NoError(t, err)
	var st struct {
		Pending int `json:"pending_events"`
	}
	require.NoError(t, json.Unmarshal(out, &st), "%s", out)
	return st.Pending
}
