package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/evspool/evspool/internal/sockwait"
)

// queue is what the drainer needs from a durable queue: append, look at the
// oldest entries without removing them, remove them once delivered. append
// may be called from many goroutines at once, and at the same time as the
// drainer's peek, ack and pending; peek and ack only from the drainer.
type queue interface {
	append(events [][]byte) error
	// peek returns up to max of the oldest unacknowledged events.
	peek(max int) ([][]byte, error)
	// ack removes the n oldest events.
	ack(n int) error
	pending() int
	close() error
}

// queueSender runs evspool's drainer pattern over another queue: one
// goroutine reads a batch, writes it with a deadline, waits until the
// receiver has read it (SIOCOUTQ, internal/sockwait), acknowledges it, and on
// any error reconnects with capped exponential backoff and resends from the
// oldest unacknowledged event.
type queueSender struct {
	addr string
	q    queue

	wake   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	conn   net.Conn
	waiter *sockwait.Waiter
	bo     *backoff.ExponentialBackOff
	buf    []byte
}

func newQueueSender(addr string, q queue) *queueSender {
	ctx, cancel := context.WithCancel(context.Background())
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime = minBackoff, maxBackoff, 0
	bo.Reset()
	s := &queueSender{addr: addr, q: q, wake: make(chan struct{}, 1), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), bo: bo}
	go s.run()
	return s
}

func (s *queueSender) Emit(_ context.Context, events [][]byte) error {
	err := s.q.append(events)
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return err
}

func (s *queueSender) Drain(ctx context.Context) int {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if n := s.q.pending(); n == 0 || ctx.Err() != nil {
			return n
		}
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

func (s *queueSender) Dropped() uint64 { return 0 }

func (s *queueSender) Close() error {
	s.cancel()
	<-s.done
	return s.q.close()
}

func (s *queueSender) run() {
	defer close(s.done)
	idle := time.NewTicker(100 * time.Millisecond)
	defer idle.Stop()
	for s.ctx.Err() == nil {
		if s.conn == nil && !s.connect() {
			break
		}
		n, err := s.sendBatch()
		if err != nil {
			s.disconnect()
			continue
		}
		if n > 0 {
			continue
		}
		select {
		case <-s.wake:
		case <-idle.C:
			if _, gone, err := s.waiter.Probe(); gone != nil || err != nil {
				s.disconnect()
			}
		case <-s.ctx.Done():
		}
	}
	s.disconnect()
}

func (s *queueSender) connect() bool {
	for {
		if c, err := dial(s.addr); err == nil {
			s.conn, s.waiter = c, sockwait.New(c)
			return true
		}
		t := time.NewTimer(s.bo.NextBackOff())
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return false
		}
	}
}

func (s *queueSender) disconnect() {
	if s.conn != nil {
		s.conn.Close()
		s.conn, s.waiter = nil, nil
	}
}

// sendBatch delivers the oldest batch and returns its size.
func (s *queueSender) sendBatch() (int, error) {
	events, err := s.q.peek(batchEvents)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	s.buf = joinLines(s.buf[:0], events)
	for b := s.buf; len(b) > 0; {
		n := min(len(b), 8<<10) // small writes, as the emitter does
		if err := writeAll(s.conn, b[:n]); err != nil {
			return 0, err
		}
		b = b[n:]
	}
	ctx, cancel := context.WithTimeout(s.ctx, writeTimeout)
	err = waitConsumed(ctx, s.waiter)
	cancel()
	if err != nil {
		return 0, err
	}
	if err := s.q.ack(len(events)); err != nil {
		return 0, errors.Join(errors.New("bench: ack"), err)
	}
	s.bo.Reset()
	return len(events), nil
}

// waitConsumed returns nil once the peer has read everything written so
// far, looking at the queue with a pause that doubles from 50 µs to 2 ms
// (a fast receiver is seen at once, a slow one costs 500 looks a second).
// It returns the
// *sockwait.PeerGoneError of a peer that hung up, whatever the queue said
// (the caller resends), and ctx's error, wrapped, when ctx ends first.
func waitConsumed(ctx context.Context, w *sockwait.Waiter) error {
	pause := 50 * time.Microsecond
	t := time.NewTimer(pause)
	defer t.Stop()
	for {
		unread, gone, err := w.Probe()
		switch {
		case err != nil:
			return err
		case gone != nil:
			return gone
		case unread == 0:
			return nil
		}
		t.Reset(pause)
		select {
		case <-ctx.Done():
			return fmt.Errorf("bench: peer has %d bytes queued unread: %w", unread, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Millisecond)
	}
}
