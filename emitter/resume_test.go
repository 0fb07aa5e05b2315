package emitter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// TestResumeWhenSocketAppears: with a backoff of an hour, the receiver's
// return is noticed through its socket path appearing, not at the next
// backoff tick (which made resuming take 10-100 ms with the defaults).
func TestResumeWhenSocketAppears(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{MinBackoff: time.Hour, MaxBackoff: time.Hour})
	r.emitAll(events("before", 1))
	waitLines(t, r.rcv, 1)
	require.NoError(t, r.rcv.Kill())
	r.emitAll(events("during", 1))
	require.Eventually(t, func() bool { return r.em.Stats().DialErrors >= 1 }, 10*time.Second, time.Millisecond)

	require.NoError(t, r.rcv.Restart())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, r.rcv.WaitCount(ctx, 2), "not resumed until the next backoff tick")
}

// TestResumeSocketMissingAtStart: a receiver that was never there is
// dialled as soon as its socket appears.
func TestResumeSocketMissingAtStart(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, &emitter.Options{MinBackoff: time.Hour, MaxBackoff: time.Hour})
	r.emitAll(events("early", 3))
	require.Eventually(t, func() bool { return r.em.Stats().DialErrors >= 1 }, 10*time.Second, time.Millisecond)
	rcv, err := refrecv.Start("unix", r.sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, rcv.WaitCount(ctx, 3))
}

// TestResumeRetriesBetweenBindAndListen: the path appears at bind(2) and
// listen(2) follows; a dial in between is refused. After the path appeared
// the dials go on quickly, not at the backoff's pace (an hour here).
func TestResumeRetriesBetweenBindAndListen(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil, &emitter.Options{MinBackoff: time.Hour, MaxBackoff: time.Hour})
	r.emitAll(events("early", 1))
	require.Eventually(t, func() bool { return r.em.Stats().DialErrors >= 1 }, 10*time.Second, time.Millisecond)
	before := r.em.Stats().DialErrors

	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, unix.Bind(fd, &unix.SockaddrUnix{Name: r.sock})) // bound, not listening
	require.Eventually(t, func() bool { return r.em.Stats().DialErrors >= before+3 }, 10*time.Second, time.Millisecond,
		"refused dials after the path appeared are not retried quickly")
}
