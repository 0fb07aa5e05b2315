package main

import (
	"context"
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

// openForwarder opens the spool and starts delivering. stdout receives the
// echo of every event; st is the fixed part of the status file.
func openForwarder(rf *runFlags, stdout io.Writer, logger *slog.Logger, st status) (*forwarder, error) {
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
	em, err := emitter.Open(rf.socket, rf.spool, opts)
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
	pending := f.em.Stats().Pending
	f.bg.Add(2)
	go func() { defer f.bg.Done(); f.status.run(ctx, statusInterval) }()
	go func() { defer f.bg.Done(); watchReplay(ctx, f.em, f.logger, pending, progressInterval()) }()
}

// pump emits the lines of r until end of input (it returns true) or until
// ctx ends (false); then the lines already read are still committed.
func (f *forwarder) pump(ctx context.Context, r io.Reader) bool {
	lines := make(chan [][]byte, 4)
	go readLines(r, int(f.rf.maxEvent), lines, f.logger)
	return pump(ctx, f.em, lines)
}

// drain waits until everything spooled was delivered, ctx ends, or timeout
// (if positive) passes.
func (f *forwarder) drain(ctx context.Context, timeout time.Duration) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if err := f.em.Flush(ctx); err != nil {
		f.logger.Warn("stopped before everything was delivered", "error", err)
	}
}

// close stops the companions, closes the emitter (what is undelivered stays
// spooled), writes the last status and returns the final figures.
func (f *forwarder) close() emitter.Stats {
	f.stopBG()
	f.bg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
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
// ctx ended first; then the lines already read are still committed.
func pump(ctx context.Context, em *emitter.Emitter, lines <-chan [][]byte) bool {
	emit := func(ctx context.Context, batch [][]byte) {
		// The emitter counts and logs spool failures; the lines were echoed.
		_ = em.Emit(ctx, batch...)
	}
	for {
		select {
		case batch, ok := <-lines:
			if !ok {
				return true
			}
			emit(ctx, batch)
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			for {
				select {
				case batch, ok := <-lines:
					if !ok {
						return false
					}
					emit(last, batch)
				default:
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
