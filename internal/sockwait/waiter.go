package sockwait

import (
	"fmt"
	"net"
	"syscall"
	"time"
)

// Default poll intervals of [Waiter.WaitConsumed].
const (
	DefaultMinInterval = 50 * time.Microsecond
	DefaultMaxInterval = 2 * time.Millisecond
)

// Options tunes a [Waiter]. The zero value means defaults.
type Options struct {
	// MinInterval is the first pause between two checks in WaitConsumed.
	// It doubles after each check up to MaxInterval, so a fast receiver is
	// seen within microseconds and a slow one costs about 500 checks a
	// second. Default DefaultMinInterval (50µs).
	MinInterval time.Duration
	// MaxInterval caps the pause between two checks. Default
	// DefaultMaxInterval (2ms). If it is below MinInterval, MinInterval is
	// used.
	MaxInterval time.Duration
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MinInterval <= 0 {
		out.MinInterval = DefaultMinInterval
	}
	if out.MaxInterval <= 0 {
		out.MaxInterval = DefaultMaxInterval
	}
	out.MaxInterval = max(out.MaxInterval, out.MinInterval)
	return out
}

// Waiter tells how many bytes written to a connection the peer has not read
// yet. Its methods are safe for concurrent use. A Waiter does not own the
// connection: closing it is the caller's job, after which the methods return
// an error matching net.ErrClosed.
type Waiter struct {
	rc   syscall.RawConn
	ok   bool
	opts Options
}

// New returns a Waiter for c with default options. It works with
// *net.UnixConn (stream sockets only) and *net.TCPConn; for anything else, or
// on a system other than Linux, Supported reports false.
func New(c net.Conn) *Waiter {
	return NewWithOptions(c, nil)
}

// NewWithOptions is New with tunables; nil opts means defaults.
func NewWithOptions(c net.Conn, opts *Options) *Waiter {
	rc, ok := rawStream(c)
	return &Waiter{rc: rc, ok: ok, opts: opts.withDefaults()}
}

// Supported reports whether the Waiter can tell what the peer has read: true
// on Linux for Unix stream and TCP sockets.
func (w *Waiter) Supported() bool { return w.ok }

// Unread returns the SIOCOUTQ count: for a Unix socket the buffer memory
// still queued at the peer (larger than the payload, see the package doc),
// for TCP the bytes not yet acknowledged by the peer's kernel, which means
// received by that kernel, not read by the application. Only 0 is exact.
func (w *Waiter) Unread() (int, error) {
	if !w.ok {
		return 0, ErrUnsupported
	}
	var n int
	err := w.control(func(fd uintptr) error {
		var err error
		n, err = outq(fd)
		return err
	})
	return n, err
}

// HungUp polls the socket without waiting and without consuming data, and
// reports whether the peer hung up (POLLHUP or POLLERR). A peer that only
// shut down its writing side has not: it still reads (see the package doc).
func (w *Waiter) HungUp() (bool, error) {
	if !w.ok {
		return false, ErrUnsupported
	}
	var gone bool
	err := w.control(func(fd uintptr) error {
		var err error
		gone, err = hungUp(fd)
		return err
	})
	return gone, err
}

// PeerClosedWrite polls the socket without waiting and without consuming
// data, and reports whether the peer shut down its writing side
// (POLLRDHUP). On TCP that is its FIN: a peer that closed, or died, with
// nothing unread in its receive queue sends a FIN and no reset, which
// HungUp does not report until the next write draws the reset; a
// receive-only peer (shutdown(SHUT_WR)) sends one too and still reads.
func (w *Waiter) PeerClosedWrite() (bool, error) {
	if !w.ok {
		return false, ErrUnsupported
	}
	var fin bool
	err := w.control(func(fd uintptr) error {
		var err error
		fin, err = closedWrite(fd)
		return err
	})
	return fin, err
}

// Closed is HungUp under the name a caller watching an idle connection on a
// ticker looks for: true once the receiver went away.
func (w *Waiter) Closed() (bool, error) { return w.HungUp() }

// control runs f on the connection's file descriptor.
func (w *Waiter) control(f func(fd uintptr) error) error {
	var ferr error
	if err := w.rc.Control(func(fd uintptr) { ferr = f(fd) }); err != nil {
		return fmt.Errorf("sockwait: connection unusable: %w", err)
	}
	return ferr
}

// Watch returns a channel that is closed once the connection becomes
// readable (the peer sent data, shut down its writing side, closed or
// reset it), or the watch ends (the connection is closed, or a read
// deadline passes). While it waits it costs nothing: one goroutine parked
// in the runtime's network poller, no system call. The peer's reads wake
// it only when the socket is readable too, so a caller watches until the
// channel is closed, then looks (HungUp, PeerClosedWrite) and, where the
// connection stays readable, polls instead. Nothing else may read the
// connection while a watch runs. Where Supported is false the channel is
// closed at once.
func (w *Waiter) Watch() <-chan struct{} {
	ch := make(chan struct{})
	if !w.ok {
		close(ch)
		return ch
	}
	go func() {
		defer close(ch)
		_ = w.rc.Read(func(fd uintptr) bool { return readable(fd) })
	}()
	return ch
}

// ArmWrite sets conn's write deadline timeout from now. A socket deadline
// is the runtime poller's and runs on real time: it bounds one system
// call. Every judgement of the receiver is made on the emitter's clock.
func ArmWrite(conn net.Conn, timeout time.Duration) error {
	return conn.SetWriteDeadline(time.Now().Add(timeout))
}
