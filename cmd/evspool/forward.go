package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/emitter/metrics"
)

// closeBudget bounds Close at exit so a signal is honoured within 2 s.
const closeBudget = time.Second

// forwarder is the core run and exec share: an emitter fed with the lines of
// a reader, with its companions (status file, drop warnings, replay
// progress, metrics server) started and stopped around it.
type forwarder struct {
	rf      *runFlags
	logger  *slog.Logger
	em      *emitter.Emitter
	status  *statusWriter
	metrics *metricsServer

	stopBG context.CancelFunc
	bg     sync.WaitGroup
}

// startGrace is how long a cancelled start-up may take to give up before
// evspool stops waiting for it (bbolt's Open itself cannot be interrupted).
const startGrace = time.Second

// errStartCancelled is openForwarderContext's error when ctx ended first.
var errStartCancelled = errors.New("start-up cancelled")

// openForwarderContext is openForwarder, given up when ctx ends: the spool's
// start-up scan stops, and if Open still has not returned after startGrace
// it is left behind (the process is about to exit, which releases the
// spool).
func openForwarderContext(ctx context.Context, rf *runFlags, stdout io.Writer, logger *slog.Logger, st status) (*forwarder, error) {
	type result struct {
		f   *forwarder
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := openForwarder(ctx, rf, stdout, logger, st)
		done <- result{f, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t := time.NewTimer(startGrace)
		defer t.Stop()
		select {
		case r = <-done:
		case <-t.C:
			return nil, errStartCancelled
		}
	}
	if ctx.Err() != nil {
		if r.f != nil {
			r.f.close()
		}
		if r.err == nil || errors.Is(r.err, ctx.Err()) {
			return nil, errStartCancelled
		}
	}
	return r.f, r.err
}

// openForwarder opens the spool and starts delivering. stdout receives the
// echo of every event; st is the fixed part of the status file. ctx cancels
// the spool's start-up scan.
func openForwarder(ctx context.Context, rf *runFlags, stdout io.Writer, logger *slog.Logger, st status) (*forwarder, error) {
	var commits *metrics.CommitHistogram
	opts := rf.emitterOptions(logger)
	opts.Stdout = stdout
	if rf.metricsAddr != "" {
		commits = metrics.NewCommitHistogram()
		opts.OnCommit = commits.Observe
	}
	// Listen before opening the spool: a taken port fails before anything
	// is read.
	ms, err := listenMetrics(rf.metricsAddr)
	if err != nil {
		return nil, err
	}
	em, err := emitter.OpenContext(ctx, rf.socket, rf.spool, opts)
	if err != nil {
		ms.close()
		return nil, err
	}
	f := &forwarder{rf: rf, logger: logger, em: em, metrics: ms}
	if ms != nil {
		st.MetricsAddr = ms.ln.Addr().String() // the port bound, for ":0"
	}
	ms.serve(em, commits, logger)
	f.startBackground(st)
	return f, nil
}

func (f *forwarder) startBackground(st status) {
	ctx, cancel := context.WithCancel(context.Background())
	f.stopBG = cancel
	f.status = newStatusWriter(f.rf.spool, st, f.em, f.logger)
	f.bg.Add(2)
	go func() { defer f.bg.Done(); f.status.run(ctx, statusInterval, statusSettled) }()
	go func() { defer f.bg.Done(); watchReplay(ctx, f.em, f.logger, progressInterval()) }()
}

// pump emits the lines of r until end of input (it returns true) or until
// ctx ends (false): then reading stops, and the lines already read are
// still committed, within stopGrace whatever the input does.
func (f *forwarder) pump(ctx context.Context, r io.Reader) bool {
	lines := make(chan [][]byte, 4)
	refuse := func(err error) { f.em.Refuse(1, err) }
	go readLines(r, int(f.rf.maxEvent), batchBytes(f.rf.maxSpool), lines, ctx.Done(), refuse, f.logger)
	return pump(ctx, f.em, lines, f.status.poke)
}

// drain waits until everything spooled was delivered, ctx ends, or timeout
// (if positive) passes.
func (f *forwarder) drain(ctx context.Context, timeout time.Duration) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	switch err := f.em.Flush(ctx); {
	case errors.Is(err, emitter.ErrNotDelivered):
		f.logger.Warn("the spool is drained, but not everything in it was delivered", "error", err)
	case err != nil:
		f.logger.Warn("stopped before everything was delivered", "error", err)
	}
}

// close stops the companions, closes the emitter (what is undelivered stays
// spooled), writes the last status and returns the final figures.
func (f *forwarder) close() emitter.Stats { return f.closeWithin(closeBudget) }

// closeWithin is close with Close bounded by budget.
func (f *forwarder) closeWithin(budget time.Duration) emitter.Stats {
	f.stopBG()
	f.bg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := f.em.Close(ctx); err != nil {
		f.logger.Error("close", "error", err)
	}
	st := f.em.Stats()
	f.status.final(st)
	f.metrics.close()
	return st
}

// pump emits each batch of lines. It returns true at end of input, false when
// ctx ended first; then the reader stops (see readLines) and what it read is
// still committed: pump takes batches until the reader is done, or for
// stopGrace, each commit bounded by the same grace. emitted is called after
// each batch.
func pump(ctx context.Context, em *emitter.Emitter, lines <-chan [][]byte, emitted func()) bool {
	emit := func(ctx context.Context, batch [][]byte) {
		// The emitter counts and logs spool failures; the lines were echoed.
		_ = em.Emit(ctx, batch...)
		emitted()
	}
	for {
		select {
		case batch, ok := <-lines:
			if !ok {
				return true
			}
			emit(ctx, batch)
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.Background(), 2*stopGrace)
			defer cancel()
			for {
				select {
				case batch, ok := <-lines:
					if !ok {
						return false
					}
					emit(last, batch)
				case <-last.Done():
					return false
				}
			}
		}
	}
}

func openError(e *env, cmd string, err error) int {
	fmt.Fprintf(e.stderr, "evspool %s: %v\n", cmd, err)
	return exitFatal
}
