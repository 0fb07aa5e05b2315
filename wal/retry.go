package wal

import (
	"context"
	"time"

	"github.com/evspool/evspool/wal/clock"
)

// schedule is the one wait schedule of wal's retry loops: the first wait
// is first, each next factor times the one before; the loop gives up after
// tries tries, or once more than total has passed since it started (0: no
// bound of that kind; one of the two is set).
type schedule struct {
	first  time.Duration
	factor int64
	tries  int
	total  time.Duration
}

// openSchedule retries a spool file whose reads fail: 4 tries, waits of
// 20, 80 and 320 ms (transient.go).
var openSchedule = schedule{first: 20 * time.Millisecond, factor: 4, tries: 4}

// lockSchedule looks again every 10 ms at a spool locked by another
// process, for up to timeout (lock.go); no timeout, one look.
func lockSchedule(timeout time.Duration) schedule {
	if timeout <= 0 {
		return schedule{tries: 1}
	}
	return schedule{first: 10 * time.Millisecond, factor: 1, total: timeout}
}

// retrying is one run of a schedule.
type retrying struct {
	s      schedule
	clk    clock.Clock
	start  time.Duration // clk.Boot() at the start
	tries  int           // tries made (failed) so far
	next   time.Duration // the wait before the next try
	waited time.Duration // waits so far
}

// start starts a run of s timed on c (Options.Clock).
func (s schedule) start(c clock.Clock) *retrying {
	return &retrying{s: s, clk: c, start: c.Boot(), next: s.first}
}

// again counts the try that just failed and reports whether the schedule
// allows another.
func (r *retrying) again() bool {
	r.tries++
	if r.s.tries > 0 && r.tries >= r.s.tries {
		return false
	}
	return r.s.total <= 0 || r.clk.Boot()-r.start <= r.s.total
}

// wait waits before the next try; if ctx ends first, it returns its error.
func (r *retrying) wait(ctx context.Context) error {
	if !sleep(r.clk, r.next, ctx.Done(), nil) {
		return ctx.Err()
	}
	r.waited += r.next
	r.next *= time.Duration(max(r.s.factor, 1))
	return nil
}
