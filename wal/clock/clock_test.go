package clock_test

import (
	"testing"
	"time"

	"github.com/evspool/evspool/internal/testkit/clocktest"
	"github.com/evspool/evspool/wal/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSystemBootIsMonotonicAndIgnoresWall(t *testing.T) {
	t.Parallel()
	c := clock.System()
	a := c.Boot()
	b := c.Boot()
	require.Positive(t, a)
	assert.GreaterOrEqual(t, b, a)
	// The boot clock runs at the wall clock's rate (no step can happen in a
	// test, but a wrong unit or an unset clock would show).
	w0, b0 := time.Now(), c.Boot()
	time.Sleep(20 * time.Millisecond)
	gotWall, gotBoot := time.Since(w0), c.Boot()-b0
	assert.InDelta(t, float64(gotWall), float64(gotBoot), float64(15*time.Millisecond))
}

func TestSystemBootID(t *testing.T) {
	t.Parallel()
	id := clock.System().BootID()
	if id == "" {
		t.Skip("no /proc/sys/kernel/random/boot_id here")
	}
	assert.Len(t, id, 36, "a boot id is a UUID")
	assert.Equal(t, id, clock.System().BootID())
}

func TestFakeStepWallMovesNothingElse(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	f := clocktest.NewFake(start)
	boot := f.Boot()
	tm := f.NewTimer(time.Second)
	f.StepWall(37 * time.Second)
	f.StepWall(-time.Hour)
	assert.Equal(t, start.Add(37*time.Second-time.Hour), f.Now())
	assert.Equal(t, boot, f.Boot())
	select {
	case <-tm.C():
		t.Fatal("a wall step fired a timer")
	default:
	}
}

func TestFakeTimers(t *testing.T) {
	t.Parallel()
	f := clocktest.NewFake(time.Unix(0, 0))
	a, b := f.NewTimer(2*time.Second), f.NewTimer(time.Second)
	require.Equal(t, 2, f.Timers())
	f.Advance(time.Second)
	select {
	case <-b.C():
	default:
		t.Fatal("timer due at 1 s did not fire at 1 s")
	}
	select {
	case <-a.C():
		t.Fatal("timer due at 2 s fired at 1 s")
	default:
	}
	assert.True(t, a.Stop())
	f.Advance(time.Hour)
	select {
	case <-a.C():
		t.Fatal("a stopped timer fired")
	default:
	}
	assert.False(t, a.Reset(time.Millisecond))
	f.Advance(time.Millisecond)
	<-a.C()
	assert.Equal(t, 0, f.Timers())
	assert.Equal(t, time.Hour+time.Hour+time.Second+time.Millisecond, f.Boot())
}

func TestFakeReboot(t *testing.T) {
	t.Parallel()
	f := clocktest.NewFake(time.Unix(100, 0))
	f.Advance(time.Hour)
	id := f.BootID()
	f.Reboot("fake-boot-2")
	assert.NotEqual(t, id, f.BootID())
	assert.Less(t, f.Boot(), time.Hour)
	assert.Equal(t, time.Unix(100, 0).Add(time.Hour), f.Now())
}
