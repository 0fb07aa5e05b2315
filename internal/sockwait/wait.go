package sockwait

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"
)

// Probe looks once, without waiting: it reads the queue, then polls for a
// hang-up (see the package doc for the order). gone is non-nil when the
// peer hung up.
func (w *Waiter) Probe() (unread int, gone *PeerGoneError, err error) {
	l := getLook()
	defer looks.Put(l)
	if err := w.control(l.probe); err != nil {
		return 0, nil, err
	}
	if l.hup {
		gone = &PeerGoneError{Unread: l.unread, Cause: l.cause}
	}
	return l.unread, gone, l.err
}

// look is one look at a descriptor under RawConn.Control: its results, and
// the functions Control runs, bound once: a closure made for every look
// would be a heap object each time, and the drainer looks after every
// write.
type look struct {
	unread      int
	hup         bool
	cause, err  error
	probe, outq func(fd uintptr)
}

var looks = sync.Pool{New: func() any {
	l := &look{}
	l.probe, l.outq = l.doProbe, l.doOutq
	return l
}}

// getLook takes a look from the pool with its results cleared.
func getLook() *look {
	l := looks.Get().(*look)
	l.unread, l.hup, l.cause, l.err = 0, false, nil, nil
	return l
}

func (l *look) doProbe(fd uintptr) {
	if l.unread, l.err = outq(fd); l.err != nil {
		return
	}
	if l.hup, l.err = hungUp(fd); l.err != nil || !l.hup {
		l.hup = false
		return
	}
	l.cause = pendingError(fd)
}

func (l *look) doOutq(fd uintptr) { l.unread, l.err = outq(fd) }

// AwaitRead waits at most max for the peer to read, and returns SIOCOUTQ
// once enough(unread) holds or the wait ends. On a Unix stream socket each
// buffer the peer frees wakes a writer waiting in the runtime's poller
// while the socket holds under a quarter of its send buffer, so a reading
// peer is seen within microseconds, without timers; a hang-up wakes it too
// (the caller probes). Past max it returns the last reading and a nil
// error: the caller looks again on its own schedule. It uses conn's write
// deadline, which the next write sets anew; nothing else may write
// meanwhile. It first looks up to spins times, yielding the processor in
// between: a peer reading on another core is seen without the poller's
// wake-up, at the price of that CPU.
func (w *Waiter) AwaitRead(conn net.Conn, max time.Duration, spins int, enough func(unread int) bool) (unread int, err error) {
	if !w.ok {
		return 0, ErrUnsupported
	}
	for range spins {
		if unread, err = w.Unread(); err != nil || enough(unread) {
			return unread, err
		}
		runtime.Gosched()
	}
	if err := ArmWrite(conn, max); err != nil {
		return 0, err
	}
	var ferr error
	err = w.rc.Write(func(fd uintptr) bool {
		unread, ferr = outq(fd)
		return ferr != nil || enough(unread)
	})
	switch {
	case ferr != nil:
		return unread, ferr
	case errors.Is(err, os.ErrDeadlineExceeded):
		return unread, nil
	case err != nil:
		return unread, fmt.Errorf("sockwait: connection unusable: %w", err)
	}
	return unread, nil
}
