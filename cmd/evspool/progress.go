package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/evspool/evspool/cmd/evspool/internal/units"
	"github.com/evspool/evspool/emitter"
)

const (
	// replayThreshold is the backlog at start above which the replay's
	// progress is logged.
	replayThreshold = 10_000
	// defaultProgressInterval is how often it is logged.
	defaultProgressInterval = 5 * time.Second
	// progressEnv overrides the interval, for tests; it is not documented.
	progressEnv = "EVSPOOL_PROGRESS_INTERVAL"
)

func progressInterval() time.Duration {
	if d, err := units.ParseDuration(os.Getenv(progressEnv)); err == nil && d > 0 {
		return d
	}
	return defaultProgressInterval
}

// watchReplay logs, every interval, how the delivery of a backlog of pending
// events found at start goes (what is left, the average rate so far, the
// estimated time left) until the backlog is delivered (or dropped) or ctx
// ends. The backlog is what the emitter's Open found (AtOpen): the drainer
// may have delivered some of it before this runs. Events emitted since
// start are not part of it.
func watchReplay(ctx context.Context, em *emitter.Emitter, logger *slog.Logger, interval time.Duration) {
	at := em.AtOpen()
	if at.PendingEvents <= replayThreshold {
		return
	}
	st := em.Stats()
	r := replay{lastSeq: at.LastSeq, events: at.PendingEvents, begin: time.Now(), delivered: st.Delivered}
	logger.Info("replaying backlog", "pending_events", at.PendingEvents, "oldest_seq", at.FirstSeq)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		stopping := false
		select {
		case <-ctx.Done():
			stopping = true
		case <-t.C:
		}
		if r.report(em.Stats(), logger, stopping) || stopping {
			return
		}
	}
}

// replay is a backlog being delivered.
type replay struct {
	lastSeq   uint64 // the backlog's newest event
	events    uint64 // its size at start
	begin     time.Time
	delivered uint64 // Stats.Delivered at start
}

// report logs the progress, or the end of the replay, which it returns.
// While stopping it only logs the end.
func (r *replay) report(st emitter.Stats, logger *slog.Logger, stopping bool) bool {
	left := backlogLeft(st, r.lastSeq)
	took := time.Since(r.begin)
	if left == 0 {
		logger.Info("backlog replayed", "events", r.events, "took", took.Round(time.Millisecond).String())
		return true
	}
	if stopping {
		return false
	}
	rate := float64(st.Delivered-r.delivered) / took.Seconds()
	logger.Info("replay progress", "backlog_left", left, "pending_events", st.Pending,
		"rate_events_per_second", int64(rate), "eta", eta(left, rate), "connected", st.Connected)
	return false
}

// backlogLeft is how many events of the backlog (sequence numbers up to
// lastSeq) are still pending.
func backlogLeft(st emitter.Stats, lastSeq uint64) uint64 {
	first := st.Spool.FirstSeq
	if st.Pending == 0 || first == 0 || first > lastSeq {
		return 0
	}
	return lastSeq - first + 1
}

func eta(left uint64, rate float64) string {
	if rate <= 0 {
		return "unknown"
	}
	d := time.Duration(float64(left) / rate * float64(time.Second))
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
