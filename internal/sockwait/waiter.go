package sockwait

import (
	"fmt"
	"net"
	"syscall"
	"time"
)

// Waiter tells how much of what was written to a connection the peer has
// not read yet. Its methods are safe for concurrent use. It does not own the
// connection; once the caller closes it, the methods return an error
// matching net.ErrClosed.
type Waiter struct {
	rc syscall.RawConn
	ok bool
}

// New returns a Waiter for c. It works with *net.UnixConn (stream sockets
// only) and *net.TCPConn on Linux; for anything else Supported is false.
func New(c net.Conn) *Waiter {
	rc, ok := rawStream(c)
	return &Waiter{rc: rc, ok: ok}
}

// Supported reports whether the Waiter can tell what the peer has read.
func (w *Waiter) Supported() bool { return w.ok }

// Unread returns the SIOCOUTQ count (see the package doc); only 0 is exact.
func (w *Waiter) Unread() (int, error) {
	l := getLook()
	defer looks.Put(l)
	if err := w.control(l.outq); err != nil {
		return 0, err
	}
	return l.unread, l.err
}

// SendMem returns the size of the send buffer and the memory its queue
// holds (SO_MEMINFO), first asking for a buffer of at least grow bytes if
// grow is positive (the kernel caps it at net.core.wmem_max, doubled).
func (w *Waiter) SendMem(grow int) (sndbuf, queued int, err error) {
	var ferr error
	if err := w.control(func(fd uintptr) {
		if grow > 0 {
			_ = raiseSndbuf(fd, grow)
		}
		sndbuf, queued, ferr = sendMem(fd)
	}); err != nil {
		return 0, 0, err
	}
	return sndbuf, queued, ferr
}

// PeerClosedWrite reports, without waiting or consuming data, whether the
// peer shut down its writing side (POLLRDHUP). On TCP that is the FIN of a
// peer that closed with nothing unread, which Probe reports as a hang-up
// only once a write draws the reset; a receive-only peer sends one too and
// still reads.
func (w *Waiter) PeerClosedWrite() (bool, error) {
	var fin bool
	var ferr error
	if err := w.control(func(fd uintptr) { fin, ferr = closedWrite(fd) }); err != nil {
		return false, err
	}
	return fin, ferr
}

// control runs f on the connection's file descriptor, or returns
// ErrUnsupported.
func (w *Waiter) control(f func(fd uintptr)) error {
	if !w.ok {
		return ErrUnsupported
	}
	if err := w.rc.Control(f); err != nil {
		return fmt.Errorf("sockwait: connection unusable: %w", err)
	}
	return nil
}

// Watch returns a channel closed once the connection becomes readable (the
// peer sent data, shut down its writing side, closed or reset it) or the
// watch ends (the connection is closed, a read deadline passes). It costs
// one goroutine parked in the runtime's poller. The peer's reads do not
// wake it, so the caller looks (Probe, PeerClosedWrite) once it fires and
// polls while the connection stays readable. Nothing else may read the
// connection meanwhile. Where Supported is false the channel is closed at
// once.
func (w *Waiter) Watch() <-chan struct{} {
	ch := make(chan struct{})
	if !w.ok {
		close(ch)
		return ch
	}
	go func() {
		defer close(ch)
		_ = w.rc.Read(readable)
	}()
	return ch
}

// ArmWrite sets conn's write deadline timeout from now on real time, and is
// the one place sockwait reads the time. Go's runtime poller measures a
// deadline against the system clock, so it is never taken from the caller's
// clock (a fake one's Now is hours away, or past); it bounds one system
// call, while every judgement of the receiver is made on the emitter's
// clock.
func ArmWrite(conn net.Conn, timeout time.Duration) error {
	return conn.SetWriteDeadline(time.Now().Add(timeout))
}
