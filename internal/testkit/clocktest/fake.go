// Package clocktest is a fake clock.Clock for tests: one that moves only
// when told to, one that also runs with real time, and Leap, which drives
// code that waits only on the clock from timer to timer.
package clocktest

import (
	"context"
	"github.com/evspool/evspool/wal/clock"
	"sort"
	"sync"
	"time"
)

// Fake is a Clock that moves when told to (NewFake), or also with real
// time (NewRunning). It is safe for concurrent use. The zero value is not
// usable.
type Fake struct {
	mu     sync.Mutex
	wall   time.Time
	boot   time.Duration
	id     string
	timers []*fakeTimer
	from   time.Time // NewRunning: real time since from is added to both readings
}

// NewFake returns a clock reading wall, booted an hour ago, with boot id
// "fake-boot-1".
func NewFake(wall time.Time) *Fake {
	return &Fake{wall: wall, boot: time.Hour, id: "fake-boot-1"}
}

// NewRunning returns a clock like NewFake's that also moves with real
// time: its timers fire when real time or Advance brings their moment.
// Code whose every wait is on the clock runs at real speed on it, and a
// test can still age events or step the wall clock.
func NewRunning(wall time.Time) *Fake {
	f := NewFake(wall)
	f.from = time.Now()
	return f
}

// ran is the real time a running clock added; 0 for one that stands still.
func (f *Fake) ran() time.Duration {
	if f.from.IsZero() {
		return 0
	}
	return time.Since(f.from)
}

// Now implements Clock.
func (f *Fake) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.wall.Add(f.ran()) }

// Boot implements Clock.
func (f *Fake) Boot() time.Duration { f.mu.Lock(); defer f.mu.Unlock(); return f.boot + f.ran() }

// BootID implements Clock.
func (f *Fake) BootID() string { f.mu.Lock(); defer f.mu.Unlock(); return f.id }

// Advance lets d pass: both readings move, and every timer due by then
// fires, in order.
func (f *Fake) Advance(d time.Duration) {
	if d < 0 {
		panic("clock: Advance by a negative duration; time steps back only on the wall clock: use StepWall")
	}
	f.mu.Lock()
	f.wall, f.boot = f.wall.Add(d), f.boot+d
	now := f.boot + f.ran()
	var due []*fakeTimer
	keep := f.timers[:0]
	for _, t := range f.timers {
		if t.at <= now {
			due = append(due, t)
		} else {
			keep = append(keep, t)
		}
	}
	f.timers = keep
	wall := f.wall.Add(f.ran())
	f.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at < due[j].at })
	for _, t := range due {
		t.fire(wall)
	}
}

// StepWall steps the wall clock alone by d (either way), as phc2sys or an
// operator does; Boot and timers do not move.
func (f *Fake) StepWall(d time.Duration) { f.mu.Lock(); f.wall = f.wall.Add(d); f.mu.Unlock() }

// Reboot starts a new boot named id: Boot restarts from a minute, the wall
// clock goes on. Timers are dropped, as a reboot drops them.
func (f *Fake) Reboot(id string) {
	f.mu.Lock()
	f.id, f.boot, f.timers = id, time.Minute-f.ran(), nil
	f.mu.Unlock()
}

// Timers is how many timers are waiting: a test can wait until the code
// under test has armed its timer before it advances.
func (f *Fake) Timers() int { f.mu.Lock(); defer f.mu.Unlock(); return len(f.timers) }

// NewTimer implements Clock.
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

type fakeTimer struct {
	f  *Fake
	c  chan time.Time
	at time.Duration
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) fire(now time.Time) {
	select {
	case t.c <- now:
	default:
	}
}

// Stop removes the timer and drains a value not yet received.
func (t *fakeTimer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	active := t.f.remove(t)
	select {
	case <-t.c:
	default:
	}
	return active
}

// Reset rearms the timer d from now; d <= 0 fires it at once.
func (t *fakeTimer) Reset(d time.Duration) bool {
	active := t.Stop()
	t.f.mu.Lock()
	if d <= 0 {
		wall := t.f.wall.Add(t.f.ran())
		t.f.mu.Unlock()
		t.fire(wall)
		return active
	}
	t.at = t.f.boot + t.f.ran() + d
	t.f.timers = append(t.f.timers, t)
	running := !t.f.from.IsZero()
	t.f.mu.Unlock()
	if running {
		time.AfterFunc(d, func() { t.f.Advance(0) })
	}
	return active
}

func (f *Fake) remove(t *fakeTimer) bool {
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Next returns how long until the earliest timer waiting fires, and false
// when none waits.
func (f *Fake) Next() (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.timers) == 0 {
		return 0, false
	}
	at := f.timers[0].at
	for _, t := range f.timers[1:] {
		at = min(at, t.at)
	}
	return max(at-f.boot-f.ran(), 0), true
}

// Leap runs time forward for code that waits only on this clock: every
// pause of real time, it advances the clock to its earliest timer, until
// ctx ends. A hundred seconds of waits then take a fraction of one.
func (f *Fake) Leap(ctx context.Context, pause time.Duration) {
	t := time.NewTicker(pause)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if d, ok := f.Next(); ok {
			f.Advance(d)
		}
	}
}
