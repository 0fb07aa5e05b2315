package main

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// joinLines lays events out as they go on the wire.
func joinLines(buf []byte, events [][]byte) []byte {
	for _, e := range events {
		buf = append(append(buf, e...), '\n')
	}
	return buf
}

func dial(addr string) (net.Conn, error) {
	return net.DialTimeout("unix", addr, dialTimeout)
}

func writeAll(c net.Conn, buf []byte) error {
	if err := c.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	_, err := c.Write(buf)
	return err
}

// reconnectOnly is what daemons do today: write; on failure reconnect with
// exponential backoff (three attempts) and retry the write once; then drop.
// While disconnected it tries to dial again once the backoff has passed and
// drops what comes meanwhile, so the producer is never held for long.
type reconnectOnly struct {
	addr    string
	dropped atomic.Uint64

	mu       sync.Mutex
	conn     net.Conn
	bo       *backoff.ExponentialBackOff
	nextDial time.Time
	buf      []byte
}

// reconnectAttempts bounds the reconnection that follows a failed write.
const reconnectAttempts = 3

func newReconnectOnly(addr string) *reconnectOnly {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = minBackoff, time.Second, 0
	bo.Reset()
	r := &reconnectOnly{addr: addr, bo: bo}
	r.conn, _ = dial(addr)
	return r
}

func (r *reconnectOnly) Emit(_ context.Context, events [][]byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = joinLines(r.buf[:0], events)
	if r.conn == nil && !r.redial() {
		r.dropped.Add(uint64(len(events)))
		return nil
	}
	if writeAll(r.conn, r.buf) == nil {
		r.bo.Reset()
		return nil
	}
	r.conn.Close()
	r.conn = nil
	for range reconnectAttempts {
		time.Sleep(r.bo.NextBackOff())
		if c, err := dial(r.addr); err == nil {
			r.conn = c
			break
		}
	}
	if r.conn != nil && writeAll(r.conn, r.buf) == nil {
		r.bo.Reset()
		return nil
	}
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
	r.nextDial = time.Now().Add(r.bo.NextBackOff())
	r.dropped.Add(uint64(len(events)))
	return nil
}

// redial makes one connection attempt once the backoff allows it.
func (r *reconnectOnly) redial() bool {
	if time.Now().Before(r.nextDial) {
		return false
	}
	c, err := dial(r.addr)
	if err != nil {
		r.nextDial = time.Now().Add(r.bo.NextBackOff())
		return false
	}
	r.conn = c
	return true
}

func (r *reconnectOnly) Drain(context.Context) int { return 0 }
func (r *reconnectOnly) Dropped() uint64           { return r.dropped.Load() }

func (r *reconnectOnly) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil {
		return r.conn.Close()
	}
	return nil
}

// writeThrough writes to one connection made at start and never reconnects:
// the speed of the socket alone. After the first failure it drops
// everything.
type writeThrough struct {
	dropped atomic.Uint64

	mu   sync.Mutex
	conn net.Conn
	buf  []byte
}

func newWriteThrough(addr string) *writeThrough {
	w := &writeThrough{}
	w.conn, _ = dial(addr)
	return w
}

func (w *writeThrough) Emit(_ context.Context, events [][]byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != nil {
		w.buf = joinLines(w.buf[:0], events)
		if writeAll(w.conn, w.buf) == nil {
			return nil
		}
		w.conn.Close()
		w.conn = nil
	}
	w.dropped.Add(uint64(len(events)))
	return nil
}

func (w *writeThrough) Drain(context.Context) int { return 0 }
func (w *writeThrough) Dropped() uint64           { return w.dropped.Load() }

func (w *writeThrough) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn != nil {
		return w.conn.Close()
	}
	return nil
}
