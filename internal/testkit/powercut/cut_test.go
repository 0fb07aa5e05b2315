package powercut

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/testkit/testmode"
)

// TestPowercut is the power-cut torture: `evspool run` writes its spool into
// the power-cut filesystem and delivers to a receiver; the power is cut at
// random moments (while it takes input and delivers, with the receiver
// reading, paused or down; while it replays a backlog; while it opens,
// compacts or salvages the spool), and after each cut the
// spool is reopened and drained by a fresh `evspool run`. With --fsync on,
// every event echoed before the cut must be delivered, in order, duplicates
// only as a contiguous replay. With --fsync=false what the README says may
// happen (recent events lost; a torn file salvaged, and what the salvage
// finds in stale pages delivered late or again), and is counted; never a
// panic or a crash loop. No run may ever fail to start or to drain.
//
// With --fsync=false the lost events (echoed, never delivered) are split by
// what the spool's surviving files held after each cut (survey_test.go):
// not written out at the cut, because no surviving file held the record
// whole, or only in pages of a commit that did not reach the disk whole
// (its meta page lost: bbolt never reads them), which is allowed; only in a
// spool.db that wal calls damaged, where the commit cannot be told (left to
// salvage, reported); and lost any other way: in the committed events
// bucket of a surviving spool.db, which the spool must deliver. That one
// must be 0, less the drops for room evspool reported (see lostOtherwise).
//
// make test runs a few cycles; make powercut (EVSPOOL_POWERCUT=long) runs 250
// cycles with fsync on and 80 with it off, a quarter of them with a second
// cut during the replay. EVSPOOL_POWERCUT_SEED replays a run; its
// seed is printed (what the processes have done by each cut still varies
// with timing). EVSPOOL_POWERCUT_ONLY=on or off runs one of the two phases.
// EVSPOOL_POWERCUT_SUMMARY names a file that gets the
// summary lines (the Makefile prints them last).
func TestPowercut(t *testing.T) {
	cutsOn, cutsOff := 4, 2
	if d, err := time.ParseDuration(os.Getenv("EVSPOOL_POWERCUT_DRAIN_LIMIT")); err == nil {
		drainLimit = d
	}
	if os.Getenv("EVSPOOL_POWERCUT") == "long" {
		cutsOn, cutsOff = 250, 80
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("EVSPOOL_POWERCUT_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "EVSPOOL_POWERCUT_SEED must be a number")
	}
	summary := func(line string) {
		fmt.Println(line)
		if p := os.Getenv("EVSPOOL_POWERCUT_SUMMARY"); p != "" {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			require.NoError(t, err)
			fmt.Fprintln(f, line)
			require.NoError(t, f.Close())
		}
	}
	if err := Available(); err != nil {
		summary(fmt.Sprintf("powercut: skipped: %v", err))
		t.Skipf("skipped: %v", err)
	}
	fmt.Printf("powercut: seed %d (replay with EVSPOOL_POWERCUT_SEED=%d)\n", seed, seed)
	bin := buildEvspool(t)

	switch os.Getenv("EVSPOOL_POWERCUT_ONLY") { // "on" or "off": one phase
	case "on":
		cutsOff = 0
	case "off":
		cutsOn = 0
	}
	if cutsOff > 0 {
		off := runPowercut(t, bin, false, cutsOff, seed)
		summary(fmt.Sprintf("powercut --fsync=false: %d cuts, %d events echoed, %d lost: %d not written out at the cut (%d never on disk, %d only in pages of a commit that did not reach the disk whole), %d only in a damaged spool.db (on disk, commit unknown, left to salvage), %d lost any other way (committed on disk at a cut, of %d such events); %d dropped for room, %d salvages, %d delivered late (out of order), %d delivered again outside a contiguous replay; no panic, no crash loop (the README: recent events can be lost; a damaged file is salvaged, and what salvage finds can come late or again)",
			off.cuts, off.echoed, off.lost, off.neverOnDisk+off.uncommitted, off.neverOnDisk, off.uncommitted, off.inDamaged,
			off.lostOtherwise(), off.seenCommitted, off.dropped, off.salvages, off.outOfOrder, off.badReplays))
		require.Zero(t, off.lostOtherwise(), "fsync off: events lost after a cut found them committed in spool.db (replay with EVSPOOL_POWERCUT_SEED=%d)", seed)
	}
	if cutsOn == 0 {
		return
	}
	on := runPowercut(t, bin, true, cutsOn, seed+1)
	summary(fmt.Sprintf("powercut: %d cuts, %d events echoed, %d lost, %d out of order", on.cuts, on.echoed, on.lost, on.outOfOrder+on.badReplays))
	require.Zero(t, on.lost, "fsync on: echoed events lost")
	require.Zero(t, on.outOfOrder, "fsync on: events first delivered out of order")
	require.Zero(t, on.badReplays, "fsync on: duplicates outside a contiguous replay")
	require.LessOrEqual(t, on.restarts, on.cuts, "fsync on: more replays started over than there were cuts")
	// With fsync on, a cut while events flow always finds the last commit's
	// events committed on disk: if the surveys saw none, they see nothing,
	// and the fsync-off figures above would prove nothing.
	require.Positive(t, on.seenCommitted, "fsync on: the surveys found no committed event")
}

// buildEvspool returns the evspool binary for the run: make test's
// (testmode.BinaryEnv, built with -race), else one built without -race.
func buildEvspool(t *testing.T) string {
	bin, err := testmode.Evspool(t.TempDir(), false)
	require.NoError(t, err)
	return bin
}

type cutResult struct {
	cuts, echoed, lost, dups, salvages int
	// The lost events (echoed, never delivered), by what the surveys after
	// the cuts found of them (survey_test.go): neverOnDisk, no surviving
	// file held their record whole after any cut (not written out: fsync
	// off allows it); uncommitted, their record survived but only where
	// bbolt does not read it (the commit that held it never reached the
	// disk whole: not written out either); inDamaged, it survived only in a
	// damaged spool.db, left to salvage, committed or not (see fate);
	// committed, in the committed state of a surviving spool.db: lost by
	// the spool, which must deliver what the disk committed, unless
	// dropped (dropped counts what evspool reported dropped for room).
	neverOnDisk, uncommitted, inDamaged, committed, dropped int
	// seenCommitted counts the echoed events, lost or not, that some
	// survey found committed: what shows the surveys see the spool.
	seenCommitted int
	// outOfOrder counts events first delivered after a later one;
	// badReplays duplicates that skip ahead within a replay; restarts
	// replays that start over from an earlier event before reaching new
	// ones: a cut during a replay, whose acknowledgements were not yet
	// committed (wal commits them with the next append, and a drain has
	// none), so the next run replays from the head again. Each cut starts
	// at most one.
	outOfOrder, badReplays, restarts int
}

// powercut is one run: a filesystem, a receiver, evspool runs and cuts.
type powercut struct {
	t     *testing.T
	bin   string
	fs    *FS
	spool string
	recv  *refrecv.Receiver
	sock  string
	fsync bool
	rng   *rand.Rand
	next  int // the next event id

	echoed   []int // ids echoed, in echo order
	salvages int
	drains3  int // drain runs that ended with events still spooled (exit 3)
	dropped  int // events evspool reported dropped for room (--on-full)

	tmp        string        // outside the mount, for copies of spool.db
	fates      map[int]*fate // what the surveys found of each event (survey_test.go)
	surveys    int           // cuts after which the spool directory was read
	surveyTime time.Duration
	damaged    int // surveys that found a spool.db bbolt cannot read
}

func runPowercut(t *testing.T, bin string, fsync bool, cycles int, seed uint64) cutResult {
	fs := mountT(t)
	tmp := t.TempDir()
	sock := filepath.Join(tmp, "recv.sock")
	recv, err := refrecv.Start("unix", sock, nil)
	require.NoError(t, err)
	defer recv.Close()
	p := &powercut{t: t, bin: bin, fs: fs, spool: filepath.Join(fs.Dir(), "spool"), recv: recv, sock: sock,
		fsync: fsync, rng: rand.New(rand.NewPCG(seed, 10)), tmp: tmp}
	for i := 0; i < cycles; i++ {
		p.cycle(i)
		if t.Failed() {
			break
		}
	}
	p.drain("final")
	return p.check()
}

// cycle starts evspool run, feeds it, and cuts the power at a random moment;
// then drains the spool with a fresh run. Now and then the receiver stops
// reading during the run (a backlog to replay), and now and then the drain
// run is itself cut.
func (p *powercut) cycle(i int) {
	// The receiver: reading (most of what is echoed is delivered before
	// the cut), paused (a backlog in the socket buffers, read after the
	// cut whatever happens to the spool), or down (everything waits in the
	// spool: only the spool can deliver it after the cut).
	recv := p.rng.IntN(3)
	switch recv {
	case 1:
		p.recv.PauseReading()
	case 2:
		require.NoError(p.t, p.recv.Kill())
	}
	run := p.start(true)
	if os.Getenv("EVSPOOL_POWERCUT") != "long" {
		// make test's few cycles cut while events flow, or they prove
		// nothing: a race-enabled evspool on a loaded machine can take
		// longer than the random moment below to echo its first line.
		// make powercut's cycles also cut during start-up.
		run.waitEchoed(p.t, 30*time.Second)
	}
	if p.rng.IntN(2) == 0 {
		// The kernel's background writeback, at a random moment before the
		// cut: without fsync, it is what puts anything on disk at all.
		time.Sleep(time.Duration(p.rng.IntN(200)) * time.Millisecond) // the random moment
		require.NoError(p.t, p.fs.Writeback())
	}
	time.Sleep(time.Duration(10+p.rng.IntN(300)) * time.Millisecond) // the random moment
	p.cut(run, Mode(p.rng.IntN(3)))
	switch recv {
	case 1:
		p.recv.ResumeReading()
	case 2:
		require.NoError(p.t, p.recv.Restart())
	}
	if p.rng.IntN(4) == 0 {
		// Cut the replay too, early or late.
		run := p.start(false)
		time.Sleep(time.Duration(p.rng.IntN(150)) * time.Millisecond) // the random moment
		p.cut(run, Mode(p.rng.IntN(3)))
	}
	p.drain(fmt.Sprintf("after cut %d", i+1))
}

// waitEchoed waits up to d for the run to echo an event.
func (r *run) waitEchoed(t *testing.T, d time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.echoed) > 0
	}, d, time.Millisecond, "evspool run echoed nothing")
}

// run is an evspool run process.
type run struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stop   chan struct{}
	fed    sync.WaitGroup
	done   chan struct{}
	mu     sync.Mutex
	echoed []int
	stderr strings.Builder
}

func (p *powercut) start(feed bool) *run {
	level := "warn"
	if !feed {
		level = "info" // a drain run's log is shown if it fails
	}
	args := []string{"run", "--socket", p.sock, "--spool", p.spool, "--max-spool-size", "4MiB",
		"--log-level", level, "--drain-timeout", "60s", fmt.Sprintf("--fsync=%v", p.fsync),
		// refrecv records a line as it reads it: no read-ahead to wait for
		// (the default 2 s would make every drain last 2 s).
		"--replay-linger", "20ms"}
	r := &run{cmd: exec.Command(p.bin, args...), stop: make(chan struct{}), done: make(chan struct{})}
	r.cmd.Stderr = &lockedWriter{mu: &r.mu, b: &r.stderr}
	var err error
	r.stdin, err = r.cmd.StdinPipe()
	require.NoError(p.t, err)
	stdout, err := r.cmd.StdoutPipe()
	require.NoError(p.t, err)
	require.NoError(p.t, r.cmd.Start())
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if id, ok := eventID(sc.Text()); ok {
				r.mu.Lock()
				r.echoed = append(r.echoed, id)
				r.mu.Unlock()
			}
		}
	}()
	if !feed {
		r.stdin.Close()
		return r
	}
	first := p.next
	p.next += 1 << 20 // ids of this run: first, first+1, ...
	seed := p.rng.Uint64()
	r.fed.Add(1)
	go func() {
		defer r.fed.Done()
		defer r.stdin.Close()
		rng := rand.New(rand.NewPCG(seed, 1))
		w := bufio.NewWriter(r.stdin)
		for id := first; ; {
			select {
			case <-r.stop:
				return
			default:
			}
			for n := 1 + rng.IntN(50); n > 0; n-- {
				fmt.Fprintln(w, eventLine(id))
				id++
			}
			if w.Flush() != nil {
				return
			}
			time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // pacing the producer
		}
	}()
	return r
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.b.Len() < 1<<20 {
		w.b.Write(b)
	}
	return len(b), nil
}

// cut cuts the power under a run. The process is stopped first (SIGSTOP, and
// its threads seen off the CPU), so that nothing it echoes afterwards can
// count: a machine without power prints nothing. Then the filesystem is
// frozen with what survives decided, the process killed, and the power
// restored.
func (p *powercut) cut(r *run, mode Mode) {
	_ = r.cmd.Process.Signal(syscall.SIGSTOP)
	waitStopped(r.cmd.Process.Pid)
	require.NoError(p.t, p.fs.PowerOff(mode, p.rng))
	_ = r.cmd.Process.Kill()
	close(r.stop)
	_ = r.cmd.Wait()
	<-r.done
	r.fed.Wait()
	r.mu.Lock()
	p.echoed = append(p.echoed, r.echoed...)
	p.checkLog(r.stderr.String(), "cut run")
	r.mu.Unlock()
	require.NoError(p.t, p.fs.PowerOn())
	p.survey()
}

// waitStopped waits (bounded) until no thread of pid is running on a CPU:
// each is stopped, or in the kernel, and will stop before it runs user code.
func waitStopped(pid int) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		running := false
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue
			}
			s := string(b)
			if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'R' {
				running = true
			}
		}
		if !running {
			return
		}
		time.Sleep(time.Millisecond) // polling /proc, bounded by the deadline
	}
}

// drain runs evspool with no input until the spool is empty: it must exit 0
// (everything delivered), or 4 when it reports losses (a salvage's
// unreadable events, drops a run cut off before it logged them) with its
// final line saying so. With --fsync=false one more exception: a salvage
// during the drain can find events in stale pages of a torn file, numbered
// above what the run set out to deliver; the run then exits 3 (events still
// spooled; 4 if it also reports losses) and the next run delivers them.
// Anything else, or a run that never gets there, is a crash loop.
func (p *powercut) drain(when string) {
	for attempt := 1; ; attempt++ {
		r := p.start(false)
		// A run that hangs dumps its goroutines (SIGQUIT) into the log the
		// failure shows.
		timer := time.AfterFunc(drainLimit, func() { _ = r.cmd.Process.Signal(syscall.SIGQUIT) })
		err := r.cmd.Wait()
		timer.Stop()
		<-r.done
		r.mu.Lock()
		log := r.stderr.String()
		r.mu.Unlock()
		p.checkLog(log, "drain run "+when)
		if err == nil {
			return
		}
		ee, ok := err.(*exec.ExitError)
		if lost := drainLost.FindStringSubmatch(log); ok && ee.ExitCode() == 4 && lost != nil && !strings.Contains(log, "SIGQUIT") {
			if lost[1] == "0" {
				return // drained; the losses are in check's count
			}
			if !p.fsync && attempt < 5 {
				p.drains3++
				continue
			}
		}
		if ok && ee.ExitCode() == 3 && !p.fsync && attempt < 5 && !strings.Contains(log, "SIGQUIT") {
			p.drains3++
			continue
		}
		require.NoError(p.t, err, "drain run %s (attempt %d) did not end cleanly (a crash loop?): %s", when, attempt, log)
		return
	}
}

// checkLog fails on a panic and counts salvages.
func (p *powercut) checkLog(log, what string) {
	for _, bad := range []string{"panic:", "fatal error:", "SIGSEGV"} {
		require.NotContains(p.t, log, bad, "%s: %s", what, log)
	}
	p.salvages += strings.Count(log, "salvaged")
	// Drops for room are counted by evspool and reported by the run that
	// made them, or by the next start if it was killed first.
	for _, m := range dropReport.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1] + m[2])
		p.dropped += n
	}
}

// drainLost matches the final line of a run that lost events: it gives
// the events still spooled.
var drainLost = regexp.MustCompile(`msg="events were lost" .* pending_events=(\d+)`)

// dropReport matches the log lines in which evspool reports events dropped
// for room (emitter/drainer.go, emitter/losses.go).
var dropReport = regexp.MustCompile(`oldest events dropped to make room" dropped_events=(\d+)|the previous run dropped (\d+) events`)

// check compares what was echoed with what the receiver got.
func (p *powercut) check() cutResult {
	res := cutResult{cuts: int(p.fs.Stats().Cuts), echoed: len(p.echoed), salvages: p.salvages}
	// Every run drained: whatever is coming has been read, or is in the
	// receiver's buffer; wait (bounded) for what is missing.
	want := map[int]bool{}
	for _, id := range p.echoed {
		want[id] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ctx.Err() == nil && p.fsync && !p.allReceived(want) {
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // polling the receiver, bounded by ctx
		}
	}
	first := map[int]int{} // id -> index in first-delivery order
	maxID, replayAt := -1, -1
	for _, line := range p.recv.Lines() {
		id, ok := eventID(line)
		if !ok {
			continue
		}
		if i, seen := first[id]; seen {
			res.dups++
			switch {
			case replayAt >= 0 && i > replayAt+1:
				// A replay that skips events: a hole in what the spool
				// still held. (Going back is a new replay: the previous
				// one was cut short, and the next run replays again from
				// what had been acknowledged.)
				res.badReplays++
				p.t.Logf("replay skips: event %d (delivered %dth) after the %dth", id, i, replayAt)
			case replayAt >= 0 && i <= replayAt:
				res.restarts++
			}
			replayAt = i
			continue
		}
		replayAt = -1
		if id < maxID {
			res.outOfOrder++
			p.t.Logf("event %d delivered first after %d", id, maxID)
		}
		first[id] = len(first)
		maxID = max(maxID, id)
	}
	for id := range want {
		if f := p.fates[id]; f != nil && f.committed {
			res.seenCommitted++
		}
		if _, ok := first[id]; !ok {
			res.lost++
			res.classify(p.fates[id])
		}
	}
	res.dropped = p.dropped
	p.t.Logf("fsync=%v: %d cuts, %d echoed, %d lost (%d never on disk, %d only outside a committed tree, %d only in a damaged spool.db, %d committed; %d echoed events found committed), %d dropped for room, %d out of order, %d duplicates (%d outside contiguous replays, %d replays started over), %d salvages, %d drain runs repeated (exit 3); %d surveys (%v), %d found spool.db damaged; filesystem %+v",
		p.fsync, res.cuts, res.echoed, res.lost, res.neverOnDisk, res.uncommitted, res.inDamaged, res.committed, res.seenCommitted, res.dropped,
		res.outOfOrder, res.dups, res.badReplays, res.restarts, res.salvages, p.drains3, p.surveys, p.surveyTime.Round(time.Millisecond), p.damaged, p.fs.Stats())
	return res
}

// lostOtherwise is how many events were lost after a cut found them
// committed on disk, beyond what evspool reported dropped for room. Drops
// are counted, not named: a drop is taken to explain one such loss. This
// test's spool does not fill up (0 drops so far), which makes it exact.
func (r *cutResult) lostOtherwise() int {
	return r.committed - min(r.committed, r.dropped)
}

// classify counts a lost event by its fate (nil: never found).
func (r *cutResult) classify(f *fate) {
	switch {
	case f == nil:
		r.neverOnDisk++
	case f.committed:
		r.committed++
	case f.intact:
		// Seen where bbolt does not read it at some cut: its commit never
		// reached the disk whole, whatever a damaged file showed later.
		r.uncommitted++
	default:
		r.inDamaged++
	}
}

func (p *powercut) allReceived(want map[int]bool) bool {
	got := map[int]bool{}
	for _, line := range p.recv.Lines() {
		if id, ok := eventID(line); ok {
			got[id] = true
		}
	}
	for id := range want {
		if !got[id] {
			return false
		}
	}
	return true
}

// eventLine is the line the test sends as event id.
func eventLine(id int) string {
	return fmt.Sprintf("pc %d %s", id, ptpLines[id%len(ptpLines)])
}

// eventID parses "pc ID ...".
func eventID(line string) (int, bool) {
	rest, ok := strings.CutPrefix(line, "pc ")
	if !ok {
		return 0, false
	}
	s, _, _ := strings.Cut(rest, " ")
	id, err := strconv.Atoi(s)
	return id, err == nil
}

var ptpLines = func() []string {
	b, err := os.ReadFile(filepath.Join("testdata", "ptp-events.txt"))
	if err != nil {
		panic(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}()

// drainLimit is how long a drain run may take before it counts as hung.
var drainLimit = 90 * time.Second
