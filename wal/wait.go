package wal

import (
	"time"

	"github.com/evspool/evspool/wal/clock"
)

// The spool reads the time only through Options.Clock: Now stamps records
// and names kept copies; Boot measures every interval, so that a wall-clock
// step moves no wait and no age; sleep times every wait. On a clock that
// stands still (a test's fake), a commit takes no time, so no leader lingers
// for a group, and a retry waits until the test moves the clock.

// sleep waits d on c and reports true, or returns false as soon as a or b
// is closed (a nil channel never is).
func sleep(c clock.Clock, d time.Duration, a, b <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return true
	case <-a:
	case <-b:
	}
	return false
}
