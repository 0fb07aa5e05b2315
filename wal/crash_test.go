package wal

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crash test re-executes the test binary as a child (the helper-process
// pattern): the child appends in a loop and prints a line for every Append
// that returned nil; the parent SIGKILLs it at a random moment, reopens the
// spool and checks that nothing the child was told is durable went missing.
const (
	crashEnvDir    = "EVSPOOL_WAL_CRASH_DIR"    // set: run as the child, on this spool
	crashEnvSeed   = "EVSPOOL_WAL_CRASH_SEED"   // the child's seed; in the parent, a seed to replay
	crashEnvRound  = "EVSPOOL_WAL_CRASH_ROUND"  // round number, to make event ids unique
	crashEnvNoSync = "EVSPOOL_WAL_CRASH_NOSYNC" // "1": the child opens with NoSync
)

// crashMaxBytes is far above what a round appends: nothing may be dropped,
// so every missing entry is a lost one.
const crashMaxBytes = 256 << 20

func TestCrashKill(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashEnvSeed); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "parse %s", crashEnvSeed)
	}
	t.Logf("seed %d (replay with %s=%d)", seed, crashEnvSeed, seed)
	for _, tc := range []struct {
		name   string
		noSync bool
		rounds int
	}{
		{name: "fsync=on", rounds: 5},
		// A process crash is not a power loss: without fsync the page
		// cache still holds every commit, so nothing may be lost either.
		{name: "fsync=off", noSync: true, rounds: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &crashRun{t: t, dir: t.TempDir(), noSync: tc.noSync, seed: seed,
				rng: rand.New(rand.NewPCG(seed, uint64(len(tc.name)))), ids: make(map[string]uint64)}
			for round := 1; round <= tc.rounds; round++ {
				c.round(round)
				if t.Failed() {
					return
				}
			}
			t.Logf("%d rounds: %d appends confirmed by children, %d entries checked, %d child acks, %d compactions in children",
				tc.rounds, c.confirmed, c.checked, c.childAcks, c.compactions)
		})
	}
}

// TestCrashChild is the child process of TestCrashKill; run on its own it
// does nothing.
func TestCrashChild(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		return
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashEnvSeed), 10, 64)
	round, _ := strconv.Atoi(os.Getenv(crashEnvRound))
	crashChild(dir, seed, round, os.Getenv(crashEnvNoSync) == "1")
}

// crashPayload is the event appended under id: the id, then a real-shaped
// PTP line chosen by the id, so the parent can rebuild it from the id alone.
func crashPayload(id string) []byte {
	var h uint32
	for i := 0; i < len(id); i++ {
		h = h*31 + uint32(id[i])
	}
	line := crashLines[int(h%uint32(len(crashLines)))]
	return []byte(id + " " + line)
}

// crashID returns the id an event was appended under.
func crashID(data []byte) string {
	id, _, _ := strings.Cut(string(data), " ")
	return id
}

var crashLines = []string{
	"ptp4l[365195.391]: [ptp4l.0.config] master offset -1 s2 freq -3972 path delay 89",
	"ptp4l[1095550.490]: [ptp4l.0.config] master offset         52 s2 freq   -1535 path delay        91",
	"phc2sys[1823126.732]: [ptp4l.0.config] CLOCK_REALTIME phc offset       -10 s2 freq   +8956 delay    508",
	"ptp4l[72530.885]: [ptp4l.0.config] port 1 (ens1f0): UNCALIBRATED to SLAVE on MASTER_CLOCK_SELECTED",
	"ts2phc[1000000200]:[ts2phc.0.config] ens2f0 nmea_status 0 offset 999999 s0",
	"GM[1710000000]:[ts2phc.0.config] ens2f0 T-GM-STATUS s2",
}

// crashChild appends until it is killed: several goroutines with one event
// per Append, a few with small batches, and one that acknowledges what was
// confirmed and now and then compacts, so that the kill cuts acks and
// compactions short too. It reports on stdout, each line written only after
// the call it reports returned nil (acking: before the call):
//
//	ready           the spool is open
//	ok SEQ ID       the event ID is committed under SEQ
//	acking SEQ      an Ack through SEQ starts
//	acked SEQ       it returned nil
//	compactions N   the spool was compacted N times so far
//	fail MESSAGE    a call failed
func crashChild(dir string, seed uint64, round int, noSync bool) {
	out := &crashOut{}
	w, err := Open(dir, &Options{MaxBytes: crashMaxBytes, NoSync: noSync})
	if err != nil {
		out.printf("fail open: %v\n", err)
		os.Exit(2)
	}
	out.printf("ready\n")
	ctx := context.Background()
	var maxConfirmed atomic.Uint64
	confirm := func(last uint64, ids []string) {
		var b bytes.Buffer
		for i, id := range ids {
			fmt.Fprintf(&b, "ok %d %s\n", last-uint64(len(ids)-1-i), id)
		}
		out.write(b.Bytes()) // one write: whole lines, or a torn last line the parent ignores
		for {
			m := maxConfirmed.Load()
			if last <= m || maxConfirmed.CompareAndSwap(m, last) {
				return
			}
		}
	}
	const singles, batchers = 4, 2
	for g := 0; g < singles+batchers; g++ {
		rng := rand.New(rand.NewPCG(seed, uint64(round*100+g)))
		go func() {
			for i := 0; ; {
				n := 1
				if g >= singles {
					n = 1 + rng.IntN(16)
				}
				ids := make([]string, n)
				events := make([][]byte, n)
				for j := range ids {
					ids[j] = fmt.Sprintf("r%d.g%d.%d", round, g, i)
					events[j] = crashPayload(ids[j])
					i++
				}
				last, err := w.Append(ctx, events...)
				if err != nil {
					out.printf("fail append: %v\n", err)
					os.Exit(2)
				}
				confirm(last, ids)
			}
		}()
	}
	go func() {
		rng := rand.New(rand.NewPCG(seed, uint64(round*100+99)))
		var acked, compactions uint64
		for {
			time.Sleep(time.Duration(1+rng.IntN(10)) * time.Millisecond) // pacing, not waiting for anything
			m := maxConfirmed.Load()
			if m <= acked {
				continue
			}
			// Keep a random tail pending, so the backlog neither vanishes nor grows without bound.
			upTo := max(acked+1, m-min(m, uint64(rng.IntN(3000))))
			out.printf("acking %d\n", upTo)
			if err := w.Ack(upTo); err != nil {
				out.printf("fail ack: %v\n", err)
				os.Exit(2)
			}
			out.printf("acked %d\n", upTo)
			acked = upTo
			if rng.IntN(8) == 0 {
				// Force a compaction now and then, to be killed amid one:
				// on its own the spool compacts only files over 2 MiB.
				if err := w.Compact(); err != nil {
					out.printf("fail compact: %v\n", err)
					os.Exit(2)
				}
			}
			if c := w.Stats().Compactions; c != compactions {
				compactions = c
				out.printf("compactions %d\n", c)
			}
		}
	}()
	time.Sleep(time.Minute) // the parent kills the child long before
	out.printf("fail not killed\n")
	os.Exit(2)
}

// crashOut writes lines to stdout unbuffered, one write(2) per call, so that
// a line on the pipe is never torn by another goroutine's.
type crashOut struct{ mu sync.Mutex }

func (o *crashOut) write(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = os.Stdout.Write(b)
}

func (o *crashOut) printf(format string, args ...any) {
	o.write(fmt.Appendf(nil, format, args...))
}

// crashRun is the parent's state across rounds on one spool.
type crashRun struct {
	t      *testing.T
	dir    string
	noSync bool
	seed   uint64
	rng    *rand.Rand

	removed uint64            // every sequence up to this one has been acknowledged
	lastSeq uint64            // the newest sequence seen so far
	ids     map[string]uint64 // event id -> sequence, for everything ever confirmed

	confirmed, checked, childAcks, compactions int
}

// crashReport is what a child printed before it was killed.
type crashReport struct {
	oks         []crashOK
	acked       uint64 // the last Ack that returned nil
	acking      uint64 // the last Ack started, perhaps cut short
	acks        int    // Acks that returned nil
	compactions int
	fails       []string
}

type crashOK struct {
	seq uint64
	id  string
}

// round runs one child, kills it, and checks the spool it left.
func (c *crashRun) round(round int) {
	t := c.t
	rep, stderr := c.runChild(round)
	for _, f := range rep.fails {
		t.Errorf("round %d: child: %s", round, f)
	}
	if t.Failed() {
		t.Logf("child stderr:\n%s", stderr)
		return
	}
	require.NotEmpty(t, rep.oks, "round %d: the child confirmed no append before it was killed", round)
	c.confirmed += len(rep.oks)
	c.childAcks += rep.acks
	c.compactions += rep.compactions

	w, err := Open(c.dir, &Options{MaxBytes: crashMaxBytes})
	require.NoError(t, err, "round %d: reopen after kill", round)
	defer func() { require.NoError(t, w.Close()) }()
	require.Nil(t, w.Salvaged(), "round %d: a killed process must not leave a damaged file", round)
	st := w.Stats()

	// The acknowledged run ends where an Ack that returned nil left it, or
	// where the one the kill cut short would have: never anywhere else.
	ackedBefore := max(c.removed, rep.acked)
	removed := st.LastSeq
	if st.FirstSeq != 0 {
		removed = st.FirstSeq - 1
	}
	if rep.acking > ackedBefore {
		require.Contains(t, []uint64{ackedBefore, rep.acking}, removed,
			"round %d: entries removed through %d; acks returned through %d, one in flight through %d", round, removed, ackedBefore, rep.acking)
	} else {
		require.Equal(t, ackedBefore, removed, "round %d: entries removed through %d, acks returned through %d", round, removed, ackedBefore)
	}

	// What is left is the contiguous run (removed, LastSeq], in order.
	entries := crashReadAll(t, w)
	require.Equal(t, st.LastSeq-removed, uint64(len(entries)), "round %d: pending count", round)
	require.Equal(t, st.PendingEvents, uint64(len(entries)), "round %d: Stats().PendingEvents", round)
	for i, e := range entries {
		require.Equal(t, removed+1+uint64(i), e.Seq, "round %d: hole or reordering at index %d", round, i)
		id := crashID(e.Data)
		require.Equal(t, string(crashPayload(id)), string(e.Data), "round %d: entry %d holds an event nobody appended", round, e.Seq)
		if prev, dup := c.ids[id]; dup && prev != e.Seq {
			t.Fatalf("round %d: event %s stored twice, at %d and %d", round, id, prev, e.Seq)
		}
		c.ids[id] = e.Seq
	}

	// Every confirmed append is there, under its sequence, unless acknowledged.
	for _, ok := range rep.oks {
		require.Greater(t, ok.seq, c.lastSeq, "round %d: sequence %d (%s) went back across a restart", round, ok.seq, ok.id)
		require.LessOrEqual(t, ok.seq, st.LastSeq, "round %d: confirmed sequence %d (%s) is past the spool's last", round, ok.seq, ok.id)
		if ok.seq <= removed {
			continue
		}
		e := entries[ok.seq-removed-1]
		require.Equal(t, string(crashPayload(ok.id)), string(e.Data), "round %d: confirmed append %d (%s) lost or changed", round, ok.seq, ok.id)
		c.checked++
	}

	// The next append goes past everything seen, and acks go on from here.
	id := fmt.Sprintf("r%d.parent", round)
	seq, err := w.Append(context.Background(), crashPayload(id))
	require.NoError(t, err)
	require.Equal(t, st.LastSeq+1, seq, "round %d: next sequence", round)
	c.ids[id], c.lastSeq = seq, seq
	upTo := removed + c.rng.Uint64N(seq-removed+1)
	require.NoError(t, w.Ack(upTo))
	c.removed = max(removed, upTo)
	require.Equal(t, seq-c.removed, w.Len(), "round %d: pending after Ack(%d)", round, upTo)
	if c.removed == seq {
		require.Zero(t, w.FirstSeq())
	} else {
		require.Equal(t, c.removed+1, w.FirstSeq())
	}
}

// runChild starts a child on the spool, kills it at a random moment after
// it opened the spool, and returns what it printed.
func (c *crashRun) runChild(round int) (*crashReport, string) {
	t := c.t
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestCrashChild$", "-test.count=1")
	nosync := "0"
	if c.noSync {
		nosync = "1"
	}
	cmd.Env = append(os.Environ(),
		crashEnvDir+"="+c.dir,
		crashEnvSeed+"="+strconv.FormatUint(c.seed, 10),
		crashEnvRound+"="+strconv.Itoa(round),
		crashEnvNoSync+"="+nosync)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	ready, confirmed := make(chan struct{}), make(chan struct{})
	done := make(chan *crashReport, 1)
	go func() { done <- parseCrashReport(stdout, ready, confirmed) }()

	delay := time.Duration(50+c.rng.IntN(750)) * time.Millisecond
	var rep *crashReport
	select {
	case <-ready:
		time.Sleep(delay) // the random moment of the crash
		// On a loaded machine the child may not have confirmed anything yet:
		// a round with nothing to check would check nothing.
		select {
		case <-confirmed:
		case <-time.After(10 * time.Second):
			t.Errorf("round %d: child confirmed no append within 10s", round)
		}
	case rep = <-done:
		t.Errorf("round %d: child ended before it opened the spool", round)
	case <-time.After(10 * time.Second):
		t.Errorf("round %d: child did not open the spool within 10s", round)
	}
	// SIGKILL: no deferred call, no flush, no Close runs in the child.
	_ = cmd.Process.Signal(syscall.SIGKILL)
	if rep == nil {
		rep = <-done // EOF: the child is gone
	}
	err = cmd.Wait()
	var exitErr *exec.ExitError
	if assert.ErrorAs(t, err, &exitErr, "round %d: child exit", round) {
		if ws, _ := exitErr.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Errorf("round %d: child ended by %v, not by the kill", round, err)
		}
	}
	t.Logf("round %d: killed after %v: %d appends confirmed, acks through %d (in flight %d)",
		round, delay, len(rep.oks), rep.acked, rep.acking)
	return rep, stderr.String()
}

// parseCrashReport reads the child's lines until EOF, closing ready at the
// child's first line and confirmed at its first confirmed append. A last
// line without its newline was cut by the kill and is ignored.
func parseCrashReport(r io.Reader, ready, confirmed chan<- struct{}) *crashReport {
	rep := &crashReport{}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return rep
		}
		f := strings.Fields(line)
		num := func() uint64 {
			if len(f) < 2 {
				return 0
			}
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n
		}
		switch f[0] {
		case "ready":
			close(ready)
		case "ok":
			if len(f) == 3 {
				if len(rep.oks) == 0 {
					close(confirmed)
				}
				rep.oks = append(rep.oks, crashOK{seq: num(), id: f[2]})
				continue
			}
			rep.fails = append(rep.fails, "malformed line "+strconv.Quote(line))
		case "acking":
			rep.acking = num()
		case "acked":
			rep.acked = num()
			rep.acks++
		case "compactions":
			rep.compactions = int(num())
		case "fail":
			rep.fails = append(rep.fails, strings.TrimSpace(line))
		}
		// Anything else is the testing package's own output.
	}
}

// crashReadAll reads every pending entry, in chunks.
func crashReadAll(t *testing.T, w *WAL) []Entry {
	var all []Entry
	from := uint64(0)
	for {
		es, err := w.Read(from, 10000, 0)
		require.NoError(t, err)
		if len(es) == 0 {
			return all
		}
		all = append(all, es...)
		from = es[len(es)-1].Seq + 1
	}
}
