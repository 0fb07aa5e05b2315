package demo

import (
	"net"
	"time"
)

// The reconnect-only sender's knobs, the same as evspool's defaults.
const (
	naiveMinBackoff   = 10 * time.Millisecond
	naiveMaxBackoff   = 100 * time.Millisecond
	naiveDialTimeout  = time.Second
	naiveWriteTimeout = 5 * time.Second
	naiveQueue        = 1 << 16
)

// naiveSender is the known fix without a spool: plain writes with a write
// deadline; on an error it reconnects once (capped exponential backoff
// between attempts, never giving up) and retries the event once, else drops
// it. Events wait in memory (a queue) while a write blocks.
type naiveSender struct {
	addr     string
	queue    chan string
	crash    chan chan struct{}
	done     chan struct{}
	conn     net.Conn
	backoff  time.Duration
	nextDial time.Time
}

func startNaive(addr string) *naiveSender {
	n := &naiveSender{addr: addr, queue: make(chan string, naiveQueue),
		crash: make(chan chan struct{}), done: make(chan struct{})}
	go n.run()
	return n
}

// send queues one event; a full queue drops it.
func (n *naiveSender) send(line string) {
	select {
	case n.queue <- line:
	default:
	}
}

// restart loses what the sender holds in memory and its connection, as a
// restarted process would.
func (n *naiveSender) restart() {
	ack := make(chan struct{})
	n.crash <- ack
	<-ack
}

// close sends what is queued, then disconnects.
func (n *naiveSender) close() {
	close(n.queue)
	<-n.done
}

func (n *naiveSender) run() {
	defer close(n.done)
	defer n.disconnect()
	for {
		select {
		case line, ok := <-n.queue:
			if !ok {
				return
			}
			n.deliver(line)
		case ack := <-n.crash:
			for len(n.queue) > 0 {
				<-n.queue
			}
			n.disconnect()
			n.backoff, n.nextDial = 0, time.Time{}
			close(ack)
		}
	}
}

// deliver writes one event, reconnecting once on an error; an event that
// cannot be written is dropped.
func (n *naiveSender) deliver(line string) {
	if n.conn == nil && !n.dial() {
		return
	}
	if n.write(line) {
		return
	}
	n.disconnect()
	if n.dial() {
		n.write(line)
	}
}

// dial connects, unless the backoff since the last failure has not passed.
func (n *naiveSender) dial() bool {
	now := time.Now()
	if now.Before(n.nextDial) {
		return false
	}
	c, err := net.DialTimeout("unix", n.addr, naiveDialTimeout)
	if err != nil {
		n.backoff = min(max(2*n.backoff, naiveMinBackoff), naiveMaxBackoff)
		n.nextDial = now.Add(n.backoff)
		return false
	}
	n.conn, n.backoff = c, 0
	return true
}

func (n *naiveSender) write(line string) bool {
	_ = n.conn.SetWriteDeadline(time.Now().Add(naiveWriteTimeout))
	_, err := n.conn.Write([]byte(line + "\n"))
	return err == nil
}

func (n *naiveSender) disconnect() {
	if n.conn != nil {
		n.conn.Close()
		n.conn = nil
	}
}
