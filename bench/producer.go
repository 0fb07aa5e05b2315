package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// producerFlags configure the producer process (see producerMain).
type producerFlags struct {
	contender, addr, dir, mode string
	duration, drainTimeout     time.Duration
	count, batch, producers    int
	rate, maxRate              float64
	startSeq                   uint64
	reportEach, fast           bool
	signalled                  bool
	reportEvery                time.Duration
	cpuProfile                 string
}

func (f *producerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.contender, "contender", cEvspoolFsync, "contender name")
	fs.StringVar(&f.addr, "addr", "", "receiver's Unix socket")
	fs.StringVar(&f.dir, "dir", "", "spool directory")
	fs.StringVar(&f.mode, "mode", "batch", "batch, concurrent, paced or drain")
	fs.DurationVar(&f.duration, "duration", 5*time.Second, "how long to produce")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "how long to wait for delivery afterwards")
	fs.IntVar(&f.count, "count", 0, "events per producer (0: until -duration)")
	fs.IntVar(&f.batch, "batch", 100, "events per Emit in batch mode")
	fs.IntVar(&f.producers, "producers", 1, "goroutines in concurrent mode")
	fs.Float64Var(&f.rate, "rate", 1000, "events per second in paced mode")
	fs.Float64Var(&f.maxRate, "max-rate", 0, "cap on events per second in batch mode (0: none)")
	fs.Uint64Var(&f.startSeq, "start-seq", 0, "first sequence number")
	fs.BoolVar(&f.reportEach, "report-each", false, "report after every batch")
	fs.BoolVar(&f.fast, "fast", false, "fsync off whatever the contender (backlog filling)")
	fs.BoolVar(&f.signalled, "signalled", false, "produce until SIGUSR1 (or -duration), drain, say idle, then stay idle until a second SIGUSR1 (or -duration)")
	fs.DurationVar(&f.reportEvery, "report-every", reportEvery, "how often acc lines are written")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of this process to the file")
}

// producerMain is the child process: it opens one contender, produces
// events, waits for delivery and reports on stdout (see reporter).
func producerMain(args []string) int {
	var f producerFlags
	fs := flag.NewFlagSet("producer", flag.ContinueOnError)
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if f.cpuProfile != "" {
		stop, err := startProfile(f.cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench producer:", err)
			return 1
		}
		defer stop()
	}
	s, err := openSender(f.contender, f.addr, f.dir, f.fast)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench producer:", err)
		return 1
	}
	var usr1 chan os.Signal
	rep := newReporter(os.Stdout, max(1, f.producers), f.reportEach, f.reportEvery)
	if f.signalled {
		usr1 = make(chan os.Signal, 2)
		signal.Notify(usr1, syscall.SIGUSR1)
		go answerMem(rep)
	}
	rep.line("ready %d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), f.duration)
	if usr1 != nil {
		go cancelOn(ctx, cancel, usr1)
	}
	errs, calls := produce(ctx, s, rep, &f)
	cancel()
	rep.close()
	rep.line("produced %d", time.Now().UnixNano())
	dctx, dcancel := context.WithTimeout(context.Background(), f.drainTimeout)
	pending := s.Drain(dctx)
	dcancel()
	if usr1 != nil {
		rep.line("idle %d", time.Now().UnixNano())
		select {
		case <-usr1:
		case <-time.After(f.duration):
		}
	}
	reportDone(rep, s, pending, errs, calls)
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "bench producer: close:", err)
	}
	return 0
}

// answerMem writes a "mem <objects>" line, the heap objects allocated so
// far, at each SIGUSR2.
func answerMem(rep *reporter) {
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	for range usr2 {
		metrics.Read(s)
		rep.line("mem %d", s[0].Value.Uint64())
	}
}

// cancelOn cancels ctx at the first signal on sig.
func cancelOn(ctx context.Context, cancel context.CancelFunc, sig <-chan os.Signal) {
	select {
	case <-sig:
		cancel()
	case <-ctx.Done():
	}
}

// reportDone writes the "done" line (see reporter).
func reportDone(rep *reporter, s sender, pending int, errs uint64, calls []int64) {
	var compactions uint64
	if c, ok := s.(interface{ Compactions() uint64 }); ok {
		compactions = c.Compactions()
	}
	slices.Sort(calls)
	rep.line("done %d %d %d %d %d %d %d", pending, s.Dropped(), errs, compactions,
		percentile(calls, 0.5), percentile(calls, 0.99), percentile(calls, 1))
}

// produce runs the producing goroutines until ctx ends or every producer
// has made its count, and returns how many Emit calls failed and how long
// each took (ns).
func produce(ctx context.Context, s sender, rep *reporter, f *producerFlags) (uint64, []int64) {
	var errs atomic.Uint64
	var mu sync.Mutex
	var calls []int64
	loop := func(p, batch int, every time.Duration) {
		e, c := emitLoop(ctx, s, rep, f, p, batch, every)
		errs.Add(e)
		mu.Lock()
		calls = append(calls, c...)
		mu.Unlock()
	}
	switch f.mode {
	case "drain":
	case "concurrent":
		var wg sync.WaitGroup
		for p := range f.producers {
			wg.Go(func() { loop(p, 1, 0) })
		}
		wg.Wait()
	case "paced":
		loop(0, 1, time.Duration(float64(time.Second)/f.rate))
	default:
		var every time.Duration
		if f.maxRate > 0 {
			every = time.Duration(float64(f.batch) / f.maxRate * float64(time.Second))
		}
		loop(0, f.batch, every)
	}
	return errs.Load(), calls
}

// emitLoop hands producer p's events over, batch at a time, until ctx ends
// or f.count events were handed over. With an interval it hands a batch
// over at most once per interval, catching up by at most maxDebt when late:
// a pace for a fast contender, no limit for a slower one.
func emitLoop(ctx context.Context, s sender, rep *reporter, f *producerFlags, p, batch int, interval time.Duration) (uint64, []int64) {
	var errs uint64
	var calls []int64
	slab := make([]byte, 0, batch*eventSize)
	events := make([][]byte, 0, batch)
	seq, next := f.startSeq, time.Now()
	for ctx.Err() == nil {
		if interval > 0 {
			if !sleepUntil(ctx, next) {
				break
			}
			next = next.Add(interval)
			if floor := time.Now().Add(-maxDebt); next.Before(floor) {
				next = floor
			}
		}
		n := batch
		if f.count > 0 {
			n = min(n, f.count-int(seq-f.startSeq))
		}
		if n <= 0 {
			break
		}
		slab, events = slab[:0], events[:0]
		for j := range n {
			slab = appendEvent(slab, p, seq+uint64(j))
			events = append(events, slab[j*eventSize:(j+1)*eventSize])
		}
		begin := time.Now()
		if err := s.Emit(ctx, events); err != nil {
			errs++
		}
		calls = append(calls, int64(time.Since(begin)))
		seq += uint64(n)
		rep.handed(p, seq)
	}
	return errs, calls
}

// maxDebt bounds how far a paced producer catches up after falling behind.
const maxDebt = 50 * time.Millisecond

func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// startProfile starts a CPU profile into path and returns what stops it.
func startProfile(path string) (func(), error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		out.Close()
	}, nil
}
