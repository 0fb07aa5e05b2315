package clock_test

import (
	"fmt"
	"time"

	"github.com/evspool/evspool/wal/clock"
)

// offsetClock is a Clock a program outside evspool writes: the system clock
// with its wall clock moved by a fixed offset (say, to a clock the node
// trusts more). Boot, BootID and the timers are the system's.
type offsetClock struct {
	clock.Clock
	offset time.Duration
}

func (c offsetClock) Now() time.Time { return c.Clock.Now().Add(c.offset) }

// A program implements Clock, here by embedding System's and replacing Now,
// and hands it to emitter.Options.Clock (and wal.Options.Clock).
func Example() {
	var c clock.Clock = offsetClock{Clock: clock.System(), offset: 37 * time.Second}
	t := c.NewTimer(time.Millisecond)
	defer t.Stop()
	<-t.C()
	fmt.Println(time.Until(c.Now()).Round(time.Second))
	// Output: 37s
}
