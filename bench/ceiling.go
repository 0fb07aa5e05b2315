package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/testkit/rawgroup"
	"github.com/evspool/evspool/wal"
)

// Ceiling compares one way of using the library with raw bbolt doing the
// same work at the same commit size (fsync on, default options), in this
// process, side by side: each round runs both, in alternating order, and the
// target is judged on the median of the rounds' ratios.
type Ceiling struct {
	Name          string    `json:"name"`
	Events        int       `json:"events"`
	Target        float64   `json:"target"`
	EvspoolPerSec []float64 `json:"evspool_events_per_sec"`
	RawPerSec     []float64 `json:"raw_events_per_sec"`
	RoundRatios   []float64 `json:"round_ratios"`
	MedianRatio   float64   `json:"median_ratio"`
	// The machine's load average (1, 5, 15 min) before the row's first round
	// and after its last: a figure taken on a busy machine is visibly so.
	LoadAvgBefore string `json:"loadavg_before"`
	LoadAvgAfter  string `json:"loadavg_after"`
	// For the rows that emit: events per append commit (group commit's
	// batch) and the Emit call's p99, per evspool round.
	EventsPerCommit []float64 `json:"events_per_commit,omitempty"`
	EmitP99Ms       []float64 `json:"emit_p99_ms,omitempty"`
	// Where a commit's time goes, per round, in µs per commit:
	// the wall time of the round over its commits, of it the transactions
	// (bbolt Update, from begin to the last fsync), and of those bbolt's
	// page writes and fsyncs; for evspool and for raw bbolt.
	EvspoolCommitUs []float64 `json:"evspool_commit_us,omitempty"`
	EvspoolTxUs     []float64 `json:"evspool_tx_us,omitempty"`
	EvspoolWriteUs  []float64 `json:"evspool_write_us,omitempty"`
	RawCommitUs     []float64 `json:"raw_commit_us,omitempty"`
	RawTxUs         []float64 `json:"raw_tx_us,omitempty"`
	RawWriteUs      []float64 `json:"raw_write_us,omitempty"`
	// The 64-goroutine row's third side: the least a group
	// commit can do on plain bbolt, the same 64 callers, one event per call,
	// a commit's events under one key;
	// its events/s per round, its ratio to raw bbolt's, and evspool's to it.
	// Not a target: how close any group commit comes on this machine.
	GroupPerSec    []float64 `json:"group_events_per_sec,omitempty"`
	GroupCommitUs  []float64 `json:"group_commit_us,omitempty"`
	GroupTxUs      []float64 `json:"group_tx_us,omitempty"`
	GroupWriteUs   []float64 `json:"group_write_us,omitempty"`
	GroupVsRaw     []float64 `json:"group_vs_raw,omitempty"`
	EvspoolVsGroup []float64 `json:"evspool_vs_group,omitempty"`
	// Its fourth side: the spool alone (wal, no emitter), the same 64
	// callers, its events read and acknowledged by a goroutine of this
	// process as the drainer reads them, but written to no socket. Not a
	// target: the spool's share of evspool's time, the rest being delivery
	// (the drainer's writes, the receiver's reads, on the same cores).
	SpoolPerSec    []float64 `json:"spool_events_per_sec,omitempty"`
	SpoolCommitUs  []float64 `json:"spool_commit_us,omitempty"`
	SpoolTxUs      []float64 `json:"spool_tx_us,omitempty"`
	SpoolWriteUs   []float64 `json:"spool_write_us,omitempty"`
	SpoolVsRaw     []float64 `json:"spool_vs_raw,omitempty"`
	EvspoolVsSpool []float64 `json:"evspool_vs_spool,omitempty"`
	Error          string    `json:"error,omitempty"`
}

// ResumeFig is the time from the receiver listening again to the first
// event received, over restarts of a receiver after a 300 ms outage.
type ResumeFig struct {
	Restarts int       `json:"restarts"`
	Ms       []float64 `json:"ms"`
	P50Ms    float64   `json:"p50_ms"`
	MaxMs    float64   `json:"max_ms"`
	Error    string    `json:"error,omitempty"`
}

// ceilingCase is one row: the library's side and raw bbolt's, and
// optionally a minimal group commit's (group) and the spool's alone
// (spool). target is the ratio to raw bbolt the row must reach, set by
// issue.
type ceilingCase struct {
	name    string
	events  int
	target  float64
	evspool func(dir string, events int) (sideRun, error)
	raw     func(dir string, events int) (sideRun, error)
	group   func(dir string, events int) (sideRun, error)
	spool   func(dir string, events int) (sideRun, error)
}

// sideRun is one round of one side: its time and, where the library emits
// (or raw bbolt commits a fixed number of events), its commits, their
// transactions' time and bbolt's write time within that, and the Emit
// calls' p99.
type sideRun struct {
	took            time.Duration
	commits         uint64
	txTime, written time.Duration
	emitP99         time.Duration
}

// timed adapts a side that only has a time.
func timed(f func(dir string, events int) (time.Duration, error)) func(string, int) (sideRun, error) {
	return func(dir string, n int) (sideRun, error) {
		d, err := f(dir, n)
		return sideRun{took: d}, err
	}
}

func ceilingCases(quick bool) []ceilingCase {
	n, backlog := 100_000, 1_000_000
	if quick {
		n, backlog = 20_000, 100_000
	}
	drain := &drainRig{events: backlog}
	return []ceilingCase{
		{"library, 64 goroutines × 1 event per Emit, to a receiver, vs raw bbolt 64-event commits", n, 0.85,
			func(dir string, n int) (sideRun, error) { return emitToReceiver(dir, n, 64, 1) },
			func(dir string, n int) (sideRun, error) { return rawCommits(dir, n, 64) },
			func(dir string, n int) (sideRun, error) { return rawGroupCommits(dir, n, 64) },
			func(dir string, n int) (sideRun, error) { return spoolAlone(dir, n, 64) }},
		{"library, 100-event Emits, to a receiver, vs raw bbolt 100-event commits", 2 * n, 0.8,
			func(dir string, n int) (sideRun, error) { return emitToReceiver(dir, n, 1, 100) },
			func(dir string, n int) (sideRun, error) { return rawCommits(dir, n, 100) }, nil, nil},
		{fmt.Sprintf("wal backlog drain (%d pending, Read + Ack 1,000 at a time) vs raw bbolt read and delete 1,000 per commit", backlog), backlog, 0.8,
			timed(drain.evspool), timed(drain.raw), nil, nil},
	}
}

// runCeilings runs every case rounds times, alternating the sides, then
// the resume measurement.
func runCeilings(tmp string, quick bool, rounds int, prog *progress) ([]*Ceiling, *ResumeFig) {
	var out []*Ceiling
	for _, cc := range ceilingCases(quick) {
		c := &Ceiling{Name: cc.name, Events: cc.events, Target: cc.target, LoadAvgBefore: loadAvg()}
		out = append(out, c)
		sides := []string{"evspool", "raw bbolt"}
		if cc.group != nil {
			sides = append(sides, "group commit")
		}
		if cc.spool != nil {
			sides = append(sides, "spool alone")
		}
		for r := range rounds {
			for _, side := range rotate(sides, r) {
				prog.begin(fmt.Sprintf("ceiling %s: %s round %d/%d", cc.name[:20], side, r+1, rounds))
				if err := c.runSide(tmp, cc, side); err != nil {
					c.Error = fmt.Sprintf("%s: %v", side, err)
					prog.end("error: " + c.Error)
					break
				}
				prog.end(humanRate(c.lastRate(side)) + " events/s")
			}
			if c.Error != "" {
				break
			}
		}
		c.LoadAvgAfter = loadAvg()
		for i := range min(len(c.EvspoolPerSec), len(c.RawPerSec)) {
			c.RoundRatios = append(c.RoundRatios, c.EvspoolPerSec[i]/c.RawPerSec[i])
		}
		for i := range min(len(c.EvspoolPerSec), len(c.RawPerSec), len(c.GroupPerSec)) {
			c.GroupVsRaw = append(c.GroupVsRaw, c.GroupPerSec[i]/c.RawPerSec[i])
			c.EvspoolVsGroup = append(c.EvspoolVsGroup, c.EvspoolPerSec[i]/c.GroupPerSec[i])
		}
		for i := range min(len(c.EvspoolPerSec), len(c.RawPerSec), len(c.SpoolPerSec)) {
			c.SpoolVsRaw = append(c.SpoolVsRaw, c.SpoolPerSec[i]/c.RawPerSec[i])
			c.EvspoolVsSpool = append(c.EvspoolVsSpool, c.EvspoolPerSec[i]/c.SpoolPerSec[i])
		}
		c.MedianRatio = median(c.RoundRatios)
	}
	prog.begin("ceiling: resume after receiver restarts")
	res := measureResume(tmp, map[bool]int{true: 5, false: 15}[quick])
	prog.end(fmt.Sprintf("p50 %.1f ms", res.P50Ms))
	return out, res
}

// runSide runs one round of one side of cc and records its figures.
func (c *Ceiling) runSide(tmp string, cc ceilingCase, side string) error {
	run := map[string]func(string, int) (sideRun, error){"evspool": cc.evspool, "raw bbolt": cc.raw, "group commit": cc.group, "spool alone": cc.spool}[side]
	var sr sideRun
	_, err := inTempDir(tmp, func(dir string) (time.Duration, error) {
		var err error
		sr, err = run(dir, cc.events)
		return sr.took, err
	})
	if err != nil {
		return err
	}
	rate := float64(cc.events) / sr.took.Seconds()
	if side == "group commit" {
		c.GroupPerSec = append(c.GroupPerSec, rate)
		sr.addBreakdown(&c.GroupCommitUs, &c.GroupTxUs, &c.GroupWriteUs)
		return nil
	}
	if side == "spool alone" {
		c.SpoolPerSec = append(c.SpoolPerSec, rate)
		sr.addBreakdown(&c.SpoolCommitUs, &c.SpoolTxUs, &c.SpoolWriteUs)
		return nil
	}
	if side == "raw bbolt" {
		c.RawPerSec = append(c.RawPerSec, rate)
		sr.addBreakdown(&c.RawCommitUs, &c.RawTxUs, &c.RawWriteUs)
		return nil
	}
	c.EvspoolPerSec = append(c.EvspoolPerSec, rate)
	sr.addBreakdown(&c.EvspoolCommitUs, &c.EvspoolTxUs, &c.EvspoolWriteUs)
	if sr.commits > 0 {
		c.EventsPerCommit = append(c.EventsPerCommit, float64(cc.events)/float64(sr.commits))
		c.EmitP99Ms = append(c.EmitP99Ms, float64(sr.emitP99)/float64(time.Millisecond))
	}
	return nil
}

// addBreakdown appends the round's wall, transaction and write time per
// commit (µs) to a side's lists, where the side counts its commits.
func (sr sideRun) addBreakdown(wall, tx, write *[]float64) {
	if sr.commits == 0 {
		return
	}
	*wall = append(*wall, perCommitUs(sr.took, sr.commits))
	*tx = append(*tx, perCommitUs(sr.txTime, sr.commits))
	*write = append(*write, perCommitUs(sr.written, sr.commits))
}

func perCommitUs(d time.Duration, commits uint64) float64 {
	return float64(d) / float64(commits) / float64(time.Microsecond)
}

func (c *Ceiling) lastRate(side string) float64 {
	rates := map[string][]float64{"evspool": c.EvspoolPerSec, "raw bbolt": c.RawPerSec, "group commit": c.GroupPerSec, "spool alone": c.SpoolPerSec}[side]
	return rates[len(rates)-1]
}

func inTempDir(tmp string, f func(dir string) (time.Duration, error)) (time.Duration, error) {
	dir, err := os.MkdirTemp(tmp, "ceiling")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	return f(dir)
}

// emitToReceiver emits n events through the library (fsync on) from
// goroutines goroutines, per events per Emit, and returns the time until the
// receiver has them all, the append commits made and the Emit calls' p99.
func emitToReceiver(dir string, n, goroutines, per int) (sideRun, error) {
	sock := filepath.Join(dir, "r.sock")
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{CountOnly: true})
	if err != nil {
		return sideRun{}, err
	}
	defer rcv.Kill()
	em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{Stdout: io.Discard})
	if err != nil {
		return sideRun{}, err
	}
	defer em.Close(context.Background())
	st0 := em.Stats().Spool
	ctx := context.Background()
	start := time.Now()
	calls, err := runCallers(n, goroutines, per, func(batch [][]byte) error { return em.Emit(ctx, batch...) })
	if err != nil {
		return sideRun{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := rcv.WaitCount(wctx, n); err != nil {
		return sideRun{}, err
	}
	took := time.Since(start)
	all := slices.Concat(calls...)
	slices.Sort(all)
	st := em.Stats().Spool
	return sideRun{took: took, commits: st.Commits - st0.Commits, txTime: st.CommitTime - st0.CommitTime,
		written: st.CommitWriteTime - st0.CommitWriteTime, emitP99: all[len(all)*99/100]}, nil
}

// runCallers feeds n events to call from goroutines callers, per events a
// call (caller g sends events g*per, g*per+goroutines*per, ...), and times
// each call: the 64-goroutine row's sides all do the same work per call. It
// returns each caller's call times, or the first error.
func runCallers(n, goroutines, per int, call func(batch [][]byte) error) ([][]time.Duration, error) {
	errs := make(chan error, goroutines)
	calls := make([][]time.Duration, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			batch := make([][]byte, 0, per)
			for i := g * per; i < n; i += goroutines * per {
				batch = batch[:0]
				for j := i; j < min(i+per, n); j++ {
					batch = append(batch, appendEvent(nil, g, uint64(j)))
				}
				began := time.Now()
				if err := call(batch); err != nil {
					errs <- err
					return
				}
				calls[g] = append(calls[g], time.Since(began))
			}
		})
	}
	wg.Wait()
	close(errs)
	return calls, <-errs
}

// rawCommits puts n events into plain bbolt, per events a commit.
func rawCommits(dir string, n, per int) (sideRun, error) {
	db, err := bolt.Open(filepath.Join(dir, "raw.db"), 0o600, nil)
	if err != nil {
		return sideRun{}, err
	}
	defer db.Close()
	name := []byte("events")
	var txTime time.Duration
	start := time.Now()
	for done := 0; done < n; done += per {
		began := time.Now()
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			for i := done; i < min(done+per, n); i++ {
				if err := b.Put(rawKey(uint64(i+1)), appendEvent(nil, 0, uint64(i))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return sideRun{}, err
		}
		txTime += time.Since(began)
	}
	took := time.Since(start)
	st := db.Stats()
	commits := uint64((n + per - 1) / per)
	return sideRun{took: took, commits: commits, txTime: txTime, written: st.TxStats.GetWriteTime()}, nil
}

// rawGroupCommits is the least a group commit can do on plain bbolt
// (internal/testkit/rawgroup), fed as emitToReceiver feeds the library: goroutines
// callers, one event per call, each call timed as the library's are (both
// sides do the same work per call). It stores a commit's events under one
// key, as the spool's frames store them (in four, for 64 events of 100
// bytes). What it loses to rawCommits is the callers' way back between
// commits.
func rawGroupCommits(dir string, n, goroutines int) (sideRun, error) {
	db, err := bolt.Open(filepath.Join(dir, "group.db"), 0o600, nil)
	if err != nil {
		return sideRun{}, err
	}
	defer db.Close()
	g, err := rawgroup.New(db, []byte("events"), goroutines, n, true)
	if err != nil {
		return sideRun{}, err
	}
	start := time.Now()
	if _, err := runCallers(n, goroutines, 1, func(batch [][]byte) error { return g.Append(batch[0]) }); err != nil {
		return sideRun{}, err
	}
	took := time.Since(start)
	commits, txTime := g.Stats()
	st := db.Stats()
	return sideRun{took: took, commits: commits, txTime: txTime, written: st.TxStats.GetWriteTime()}, nil
}

// spoolAlone is evspool's spool without its emitter, fed as emitToReceiver
// feeds the library (goroutines callers, one event per Append), its events
// read and acknowledged as the drainer does: woken by the callers, it waits
// out the callers' way back (wal's Read does), reads up to 1,000 events and
// acknowledges them at once, writing them nowhere. The time is until every
// event is acknowledged. What evspool loses to it is delivery: the drainer's
// socket writes, readings of the socket and receiver notes, and the
// receiver's reads, all on the same cores as the callers.
func spoolAlone(dir string, n, goroutines int) (sideRun, error) {
	w, err := wal.Open(filepath.Join(dir, "spool"), nil)
	if err != nil {
		return sideRun{}, err
	}
	defer w.Close()
	st0 := w.Stats()
	var readTo atomic.Uint64
	wake := make(chan struct{}, 1)
	readerErr := make(chan error, 1)
	go func() { readerErr <- readAndAck(w, uint64(n), &readTo, wake) }()
	ctx := context.Background()
	start := time.Now()
	_, err = runCallers(n, goroutines, 1, func(batch [][]byte) error {
		last, err := w.Append(ctx, batch...)
		if err == nil && last > readTo.Load() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		return err
	})
	if err != nil {
		return sideRun{}, err
	}
	if err := <-readerErr; err != nil {
		return sideRun{}, err
	}
	took := time.Since(start)
	st := w.Stats()
	return sideRun{took: took, commits: st.Commits - st0.Commits, txTime: st.CommitTime - st0.CommitTime,
		written: st.CommitWriteTime - st0.CommitWriteTime}, nil
}

// readAndAck reads and acknowledges w's events until n are acknowledged
// (spoolAlone's drainer, without a socket). It gives up after a minute.
func readAndAck(w *wal.WAL, n uint64, readTo *atomic.Uint64, wake <-chan struct{}) error {
	deadline := time.Now().Add(time.Minute)
	idle := time.NewTimer(time.Millisecond)
	defer idle.Stop()
	for from := uint64(1); from <= n; {
		es, err := w.Read(from, 1000, 1<<20)
		if err != nil {
			return err
		}
		if len(es) == 0 {
			if time.Now().After(deadline) {
				return fmt.Errorf("spool alone: %d of %d events read after a minute", from-1, n)
			}
			idle.Reset(time.Millisecond) // a wake-up lost to the race with readTo
			select {
			case <-wake:
			case <-idle.C:
			}
			continue
		}
		from = es[len(es)-1].Seq + 1
		readTo.Store(from - 1)
		if err := w.Ack(from - 1); err != nil {
			return err
		}
	}
	return nil
}

// waitDelivered waits (10 s at most) until em counts n events delivered.
func waitDelivered(ctx context.Context, em *emitter.Emitter, n uint64) error {
	deadline := time.Now().Add(10 * time.Second)
	for em.Stats().Delivered < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("resume: %d of %d events delivered after 10 s", em.Stats().Delivered, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond): // polling the emitter's counters
		}
	}
	return nil
}

func rawKey(seq uint64) []byte {
	return []byte{byte(seq >> 56), byte(seq >> 48), byte(seq >> 40), byte(seq >> 32),
		byte(seq >> 24), byte(seq >> 16), byte(seq >> 8), byte(seq)}
}

// measureResume restarts a receiver restarts times after a 300 ms outage
// with an event waiting, and times listening again to that event received.
func measureResume(tmp string, restarts int) *ResumeFig {
	res := &ResumeFig{Restarts: restarts}
	_, err := inTempDir(tmp, func(dir string) (time.Duration, error) {
		sock := filepath.Join(dir, "r.sock")
		rcv, err := refrecv.Start("unix", sock, &refrecv.Options{CountOnly: true})
		if err != nil {
			return 0, err
		}
		defer rcv.Close()
		em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{Stdout: io.Discard})
		if err != nil {
			return 0, err
		}
		defer em.Close(context.Background())
		ctx := context.Background()
		for i := range restarts {
			if err := rcv.Kill(); err != nil {
				return 0, err
			}
			if err := em.Emit(ctx, appendEvent(nil, 0, uint64(i))); err != nil {
				return 0, err
			}
			time.Sleep(300 * time.Millisecond) // the outage
			want := rcv.Count() + 1
			start := time.Now()
			if err := rcv.Restart(); err != nil {
				return 0, err
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := rcv.WaitCount(wctx, want)
			cancel()
			if err != nil {
				return 0, err
			}
			res.Ms = append(res.Ms, float64(time.Since(start))/float64(time.Millisecond))
			// One more event, so the receiver is seen handling what it
			// read (a read begins after the timed event): a receiver that
			// dies after each single read looks crash-looping, and the
			// drainer rightly dials it less and less often (the figure
			// went 0.5 ms, ..., 17 ms, 339 ms, 979 ms, 2.3 s, 4.7 s from
			// the 8th restart on). Not timed.
			if err := em.Emit(ctx, appendEvent(nil, 1, uint64(i))); err != nil {
				return 0, err
			}
			if err := waitDelivered(ctx, em, uint64(2*i+1)); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	if err != nil {
		res.Error = err.Error()
	}
	if len(res.Ms) > 0 {
		res.P50Ms, res.MaxMs = median(res.Ms), slices.Max(res.Ms)
	}
	return res
}

// drainRig builds each backlog once (without fsync: the fill is not
// measured) and drains a fresh copy of it each round.
type drainRig struct {
	events       int
	spool, rawDB string // the backlogs built, "" until then
}

func (d *drainRig) evspool(dir string, n int) (time.Duration, error) {
	if d.spool == "" {
		src := filepath.Join(filepath.Dir(dir), "backlog-spool")
		if err := fillSpool(src, n); err != nil {
			return 0, err
		}
		d.spool = src
	}
	spool := filepath.Join(dir, "spool")
	if err := os.Mkdir(spool, 0o700); err != nil {
		return 0, err
	}
	if err := copyFile(filepath.Join(d.spool, "spool.db"), filepath.Join(spool, "spool.db")); err != nil {
		return 0, err
	}
	w, err := wal.Open(spool, &wal.Options{MaxBytes: 1 << 30})
	if err != nil {
		return 0, err
	}
	defer w.Close()
	if w.Len() != uint64(n) {
		return 0, fmt.Errorf("backlog holds %d events, not %d", w.Len(), n)
	}
	start := time.Now()
	for from := uint64(0); ; {
		es, err := w.Read(from, 1000, 0)
		if err != nil {
			return 0, err
		}
		if len(es) == 0 {
			break
		}
		from = es[len(es)-1].Seq + 1
		if err := w.Ack(from - 1); err != nil {
			return 0, err
		}
	}
	if err := w.Close(); err != nil { // commits what is left to delete
		return 0, err
	}
	return time.Since(start), nil
}

func fillSpool(dir string, n int) error {
	w, err := wal.Open(dir, &wal.Options{MaxBytes: 1 << 30, NoSync: true})
	if err != nil {
		return err
	}
	defer w.Close()
	for done := 0; done < n; done += 1000 {
		batch := make([][]byte, 0, 1000)
		for i := done; i < min(done+1000, n); i++ {
			batch = append(batch, appendEvent(nil, 0, uint64(i)))
		}
		if _, err := w.Append(context.Background(), batch...); err != nil {
			return err
		}
	}
	return w.Close()
}

func (d *drainRig) raw(dir string, n int) (time.Duration, error) {
	if d.rawDB == "" {
		src := filepath.Join(filepath.Dir(dir), "backlog-raw.db")
		if err := fillRaw(src, n); err != nil {
			return 0, err
		}
		d.rawDB = src
	}
	path := filepath.Join(dir, "raw.db")
	if err := copyFile(d.rawDB, path); err != nil {
		return 0, err
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	name := []byte("events")
	start := time.Now()
	got := 0
	for more := true; more; {
		err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket(name)
			var keys [][]byte
			c := b.Cursor()
			for k, v := c.First(); k != nil && len(keys) < 1000; k, v = c.Next() {
				_ = append([]byte(nil), v...) // what a sender would take
				keys = append(keys, append([]byte(nil), k...))
			}
			more = len(keys) > 0
			got += len(keys)
			for _, k := range keys {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if got != n {
		return 0, fmt.Errorf("raw backlog held %d events, not %d", got, n)
	}
	return time.Since(start), nil
}

func fillRaw(path string, n int) error {
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	for done := 0; done < n; done += 1000 {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("events"))
			if err != nil {
				return err
			}
			for i := done; i < min(done+1000, n); i++ {
				if err := b.Put(rawKey(uint64(i+1)), appendEvent(nil, 0, uint64(i))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return db.Sync()
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
