package emitter

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// What the receiver writes (docs/delivery.md, "What the receiver writes"):
// each connection has a reader goroutine that reads until the connection
// ends, so that a receiver that writes back never blocks on a full buffer
// and the drainer's end closes with nothing unread. It splits the bytes
// into lines of at most Options.MaxReceiveLine (a longer one is discarded
// and counted), flags a state request (Options.StateRequest) for the
// drainer, which answers it at its next write boundary, and queues every
// other line for Options.OnReceive. Neither waits on the other: the queue
// holds receiveQueue lines and a line that finds it full is dropped and
// counted.

// receiveQueue is how many lines wait for Options.OnReceive at most.
const receiveQueue = 256

// resetWait bounds, in real time as a socket deadline, the wait for a hung
// up connection's reader to return (resetSeen): its read returns at once.
const resetWait = 100 * time.Millisecond

// listener is what the reader goroutines share for the Emitter's lifetime:
// the queue to OnReceive, the request flag and the counts.
type listener struct {
	opts  *Options
	wake  func() // the drainer's notify
	queue chan []byte
	done  chan struct{} // closed when the OnReceive goroutine returns

	requested atomic.Bool // a state request waits for its answer
	lines     atomic.Uint64
	requests  atomic.Uint64
	long      atomic.Uint64
	dropped   atomic.Uint64
}

func newListener(opts *Options, wake func()) *listener {
	l := &listener{opts: opts, wake: wake, done: make(chan struct{})}
	if opts.OnReceive == nil {
		close(l.done)
		return l
	}
	l.queue = make(chan []byte, receiveQueue)
	go func() {
		defer close(l.done)
		for line := range l.queue {
			l.call(line)
		}
	}()
	return l
}

// call hands one line to OnReceive; a panic there loses the line, not the
// process.
func (l *listener) call(line []byte) {
	defer func() {
		if r := recover(); r != nil {
			l.opts.Logger.Error("OnReceive panicked; the line it was handed is lost", "panic", r)
		}
	}()
	l.opts.OnReceive(line)
}

// stop ends the OnReceive goroutine once it has handed out what is queued,
// or when ctx ends. Only after every reader has returned.
func (l *listener) stop(ctx context.Context) error {
	if l.queue != nil {
		close(l.queue)
	}
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		return errors.New("emitter: close: OnReceive did not return")
	}
}

// inbound is one connection's reader: done is closed when it has returned,
// err says why (io.EOF: the receiver shut its writing side down or closed).
type inbound struct {
	done chan struct{}
	err  error
	got  atomic.Uint64 // lines read on this connection
}

// read starts reading conn.
func (l *listener) read(conn net.Conn) *inbound {
	in := &inbound{done: make(chan struct{})}
	go func() {
		defer close(in.done)
		buf := make([]byte, 4<<10)
		var line []byte
		skip := false // inside a line too long: discard until its end
		for {
			n, err := conn.Read(buf)
			line, skip = l.split(in, buf[:n], line, skip)
			if err != nil {
				if len(line) > 0 && !skip {
					l.deliver(in, line) // a last line without its newline, as bufio.ScanLines
				}
				in.err = err
				return
			}
		}
	}()
	return in
}

// split takes the lines b completes, returning the part of a line it
// leaves and whether that line is being discarded.
func (l *listener) split(in *inbound, b, line []byte, skip bool) ([]byte, bool) {
	limit := l.opts.MaxReceiveLine
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		switch {
		case skip:
		case len(line)+len(part)+1 > limit:
			l.long.Add(1)
			skip, line = true, line[:0]
		default:
			line = append(line, part...)
		}
		if i >= 0 {
			if !skip {
				l.deliver(in, line)
			}
			line, skip = line[:0], false
		}
	}
	return line, skip
}

// deliver flags a state request, or queues the line for OnReceive.
func (l *listener) deliver(in *inbound, line []byte) {
	l.lines.Add(1)
	in.got.Add(1)
	if l.opts.StateKey != nil && l.opts.StateRequest != nil && l.opts.StateRequest(line) {
		l.requests.Add(1)
		l.requested.Store(true)
		l.wake()
		return
	}
	if l.queue == nil {
		return
	}
	select {
	case l.queue <- bytes.Clone(line):
	default:
		l.dropped.Add(1)
	}
}

// resetSeen waits up to wait for the reader of a connection found hung up
// to return, and reports whether it read ECONNRESET: a read clears the
// socket's pending error, so the probe after it cannot see that the
// receiver left bytes unread.
func (in *inbound) resetSeen(wait time.Duration) bool {
	if in == nil {
		return false
	}
	if wait <= 0 {
		select {
		case <-in.done:
			return errors.Is(in.err, syscall.ECONNRESET)
		default:
			return false
		}
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-in.done:
		return errors.Is(in.err, syscall.ECONNRESET)
	case <-t.C:
		return false
	}
}
