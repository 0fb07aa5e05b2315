package wal

import (
	"context"
	"time"
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

// waiter is the time a retry waits on: real time in the spool (realTime),
// time that passes only by waiting in the schedule's tests.
type waiter interface {
	now() time.Time
	// wait waits d, or returns ctx.Err() as soon as ctx ends.
	wait(ctx context.Context, d time.Duration) error
}

// retrying is one run of a schedule.
type retrying struct {
	s      schedule
	wt     waiter
	start  time.Time
	tries  int           // tries made (failed) so far
	next   time.Duration // the wait before the next try
	waited time.Duration // waits so far
}

func (s schedule) start(wt waiter) *retrying {
	return &retrying{s: s, wt: wt, start: wt.now(), next: s.first}
}

// again counts the try that just failed and reports whether the schedule
// allows another.
func (r *retrying) again() bool {
	r.tries++
	if r.s.tries > 0 && r.tries >= r.s.tries {
		return false
	}
	return r.s.total <= 0 || r.wt.now().Sub(r.start) <= r.s.total
}

// wait waits before the next try; if ctx ends first, it returns its error.
func (r *retrying) wait(ctx context.Context) error {
	if err := r.wt.wait(ctx, r.next); err != nil {
		return err
	}
	r.waited += r.next
	r.next *= time.Duration(max(r.s.factor, 1))
	return nil
}

// realTime is the waiter of the spool: the monotonic clock. A retry waits
// for a disk or another process, in real time whatever Options.Clock says.
type realTime struct{}

func (realTime) now() time.Time { return time.Now() }

func (realTime) wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
