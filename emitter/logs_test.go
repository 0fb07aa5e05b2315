package emitter_test

import (
	"log/slog"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

const outageMsg = "receiver unreachable; spooling events until it is back"

// A receiver that dies with data unread frees its queue, so the count read
// after the hang-up is 0: the log must give the one seen before.
func TestHangUpLogsUnreadBeforeVanishing(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{WriteTimeout: 30 * time.Millisecond})
	r.emitAll(events("warm", 5))
	r.flush(5 * time.Second)
	r.rcv.PauseReading()
	r.emitAll(events("unread", 200))
	require.Eventually(t, func() bool { return r.em.Stats().Stalls > 0 }, 5*time.Second, time.Millisecond,
		"the drainer saw the queue")
	require.NoError(t, r.rcv.Kill())
	require.Eventually(t, func() bool { return r.logs.count(slog.LevelWarn, outageMsg) > 0 }, 5*time.Second, time.Millisecond)
	v, ok := r.logs.attr(outageMsg, "error")
	require.True(t, ok)
	m := regexp.MustCompile(`with (\d+) bytes unread`).FindStringSubmatch(v.String())
	require.NotNil(t, m, "error: %s", v)
	n, _ := strconv.Atoi(m[1])
	assert.Positive(t, n, "error: %s", v)
}

// One long stall polls the queue hundreds of times: suppressed_since_last
// must count suppressed warnings (stalls), not polls.
func TestStallWarningsCountStallsNotPolls(t *testing.T) {
	t.Parallel()
	// The interval is long enough that the second stall falls inside it
	// on a loaded machine too (a stall, a flush and a second stall take
	// seconds there); the third waits it out.
	const interval = 6 * time.Second
	r := newRig(t, &refrecv.Options{}, &emitter.Options{
		WriteTimeout: 20 * time.Millisecond, StallTimeout: time.Minute, WarnInterval: interval})
	// stall returns a time after the stall was counted (and warned of).
	stall := func(n uint64, hold time.Duration) time.Time {
		r.rcv.PauseReading()
		r.emitAll(events("stall"+strconv.Itoa(int(n)), 3))
		require.Eventually(t, func() bool { return r.em.Stats().Stalls == n }, 5*time.Second, time.Millisecond)
		seen := time.Now()
		<-time.After(hold) // the stall goes on: many polls
		r.rcv.ResumeReading()
		r.flush(5 * time.Second)
		return seen
	}
	first := stall(1, 150*time.Millisecond) // warned
	stall(2, 0)                             // suppressed: within the interval
	const msg = "receiver is not reading; keeping the connection"
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg), "the second stall came within the interval")
	<-time.After(time.Until(first.Add(interval + 10*time.Millisecond)))
	stall(3, 0) // warned, with one suppressed
	require.Equal(t, 2, r.logs.count(slog.LevelWarn, msg))
	v, ok := r.logs.attr(msg, "suppressed_since_last")
	require.True(t, ok)
	assert.EqualValues(t, 1, v.Int64())
}

// A receiver frozen past the stall timeout: the outage began when it last
// read, not when the connection was dropped.
func TestOutageStartsWhenDeliveryStopped(t *testing.T) {
	const stallTimeout = 300 * time.Millisecond
	r := newRig(t, &refrecv.Options{}, &emitter.Options{WriteTimeout: 20 * time.Millisecond, StallTimeout: stallTimeout})
	r.emitAll(events("warm", 5))
	r.flush(5 * time.Second)
	r.rcv.PauseReading()
	begin := time.Now()
	r.emitAll(events("frozen", 50))
	require.Eventually(t, func() bool { return !r.em.Stats().OutageStart.IsZero() }, 5*time.Second, time.Millisecond)
	start := r.em.Stats().OutageStart
	assert.Less(t, start.Sub(begin), stallTimeout/2, "outage start %v is the drop, not the last read at %v", start, begin)
}
