package torture

import (
	"bufio"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/verify"
)

// chaos drives evspool run and a receiver through random faults: SIGKILL the
// receiver (restarted after a pause), SIGKILL evspool (restarted at once on
// the same spool), SIGSTOP/SIGCONT the receiver. Then every line evspool
// echoed must have reached the receiver, in order, with duplicates only as
// contiguous replays.
type chaos struct {
	t     *testing.T
	rng   *rand.Rand
	sock  string
	spool string
	file  string
	rcv   *child

	mu    sync.Mutex // guards run and next, shared with the feeder
	run   *child
	next  int      // next event id to feed
	echo  []string // lines echoed by finished runs
	stats map[string]int
}

func TestChaos(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EVSPOOL_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	duration := 6 * time.Second
	if long() {
		duration = 3 * time.Minute
	}
	t.Logf("seed %d (rerun this schedule: EVSPOOL_CHAOS_SEED=%d go test -run TestChaos ./internal/testkit/torture)", seed, seed)
	dir := t.TempDir()
	c := &chaos{t: t, rng: rand.New(rand.NewPCG(seed, seed>>1)), sock: filepath.Join(dir, "events.sock"),
		spool: filepath.Join(dir, "spool"), file: filepath.Join(dir, "received.txt"), stats: map[string]int{}}
	c.startReceiver()
	c.startRun()
	stopFeed := make(chan struct{})
	fed := make(chan struct{})
	go c.feed(stopFeed, fed)

	for end := time.Now().Add(duration); time.Now().Before(end); {
		time.Sleep(time.Duration(50+c.rng.IntN(350)) * time.Millisecond)
		c.fault()
	}
	close(stopFeed)
	<-fed
	c.finish()
}

func (c *chaos) startReceiver() {
	c.rcv = startChild(c.t, os.Args[0], []string{receiverEnv + "=1"}, c.sock, c.file)
}

func (c *chaos) startRun() {
	c.run = startChild(c.t, binary, nil, "run", "--socket", c.sock, "--spool", c.spool,
		"--write-timeout", "300ms", "--log-level", "warn")
}

// feed writes events to whichever run is current, at about 2,000 a second.
func (c *chaos) feed(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		stdin := c.run.stdin
		first := c.next
		c.next += 2
		c.mu.Unlock()
		// A write fails while a run is being replaced: those lines were
		// never read, so never promised.
		stdin.Write([]byte(event(first) + "\n" + event(first+1) + "\n"))
	}
}

func (c *chaos) fault() {
	switch c.rng.IntN(3) {
	case 0:
		c.stats["receiver_sigkill"]++
		c.rcv.kill()
		time.Sleep(time.Duration(c.rng.IntN(300)) * time.Millisecond)
		c.startReceiver()
	case 1:
		c.stats["evspool_sigkill"]++
		c.replaceRun()
	case 2:
		c.stats["receiver_sigstop"]++
		c.rcv.cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(time.Duration(100+c.rng.IntN(600)) * time.Millisecond)
		c.rcv.cmd.Process.Signal(syscall.SIGCONT)
	}
}

func (c *chaos) replaceRun() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.run.kill()
	c.echo = append(c.echo, c.run.lines()...)
	c.startRun()
}

func (c *chaos) finish() {
	t := c.t
	c.mu.Lock()
	defer c.mu.Unlock()
	last := c.run
	require.NoError(t, last.stdin.Close())
	require.Equal(t, 0, last.exitCode(t, time.Minute), "the last run must deliver everything: %s", last.logs())
	echoed := validLines(t, append(c.echo, last.lines()...))
	got := c.received(len(echoed))
	c.rcv.kill()

	// The lines fed that were either echoed or delivered, in feed order: a
	// line can be delivered without being echoed (committed, then killed
	// before the echo), never the other way round.
	keep := map[int]bool{}
	for _, l := range echoed {
		keep[eventID(l)] = true
	}
	for _, l := range got {
		id := eventID(l)
		require.GreaterOrEqual(t, id, 0, "the receiver got a line that was never fed: %q", l)
		keep[id] = true
	}
	var sent []string
	for id := 0; id < c.next; id++ {
		if keep[id] {
			sent = append(sent, event(id))
		}
	}
	res := verify.Check(sent, got)
	t.Logf("faults %v; fed %d, echoed %d; %s", c.stats, c.next, len(echoed), res)
	require.True(t, res.OK(), res.String())
}

// received waits until the receiver's file holds at least n distinct events.
func (c *chaos) received(n int) []string {
	var lines []string
	require.Eventually(c.t, func() bool {
		lines = readLines(c.t, c.file)
		seen := map[string]bool{}
		for _, l := range lines {
			seen[l] = true
		}
		return len(seen) >= n
	}, 30*time.Second, 20*time.Millisecond)
	return lines
}

func validLines(t *testing.T, lines []string) []string {
	var out []string
	for i, l := range lines {
		if eventID(l) >= 0 {
			out = append(out, l)
		} else if i != len(lines)-1 {
			// Only the very last line of a killed run may be torn.
			t.Logf("torn echo line %q", l)
		}
	}
	return out
}

func readLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}
