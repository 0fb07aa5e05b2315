package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Settings of linuxptp-daemon's pkg/ipc Link and Cache (PR "Add ipc cache
// for cloud event proxy v2", 6b04aa75) and of its utils.ReconnectWithBackoff.
const (
	linkQueue        = 16 // NewCache's channel in the PR's tests and sender
	linkDialTimeout  = 5 * time.Second
	linkWriteTimeout = 5 * time.Second
	linkBackoffBase  = 100 * time.Millisecond
	linkBackoffMax   = 5 * time.Second
)

// linkKey is the daemon cache's key.
type linkKey struct{ typ, profile, iface string }

// linkMsg is one message: its key, its values as they compare, its line.
type linkMsg struct {
	key    linkKey
	values string
	line   []byte
}

// linkSender is built like the daemon's ipc.Cache + ipc.Link: Send keeps
// the newest message per (type, profile, iface), drops a message whose
// values did not change, and queues a change on a channel of linkQueue
// that drops when full; one goroutine (run, the owner of the connection)
// dials with exponential backoff, writes what the channel holds, and
// answers the receiver's status_request by writing the whole cache. Its
// select between the two is Go's random pick, so after an outage an older
// queued change can land after the snapshot, as upstream's does.
type linkSender struct {
	addr    string
	out     chan linkMsg
	dropped atomic.Uint64
	cancel  context.CancelFunc
	done    chan struct{}

	mu    sync.Mutex // guards store, shared by Send and the snapshot
	store map[linkKey]linkMsg
}

func newLinkSender(addr string) *linkSender {
	ctx, cancel := context.WithCancel(context.Background())
	l := &linkSender{addr: addr, out: make(chan linkMsg, linkQueue), cancel: cancel, done: make(chan struct{}),
		store: map[linkKey]linkMsg{}}
	go l.run(ctx)
	return l
}

// Send records one message line and queues it if it is a change. A line
// that is not a message is not sent, as a daemon would not build one.
func (l *linkSender) Send(line []byte) {
	var m struct {
		Type    string          `json:"type"`
		Profile string          `json:"profile"`
		Iface   string          `json:"iface"`
		Values  json.RawMessage `json:"values"`
	}
	if json.Unmarshal(line, &m) != nil {
		return
	}
	msg := linkMsg{key: linkKey{m.Type, m.Profile, m.Iface}, values: string(m.Values), line: append([]byte(nil), line...)}
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.store[msg.key]; ok && prev.values == msg.values {
		return
	}
	l.store[msg.key] = msg
	select {
	case l.out <- msg:
	default:
		l.dropped.Add(1) // upstream: "the state will be recorded within the cache, but not sent"
	}
}

// Dropped counts the changes the full channel dropped.
func (l *linkSender) Dropped() uint64 { return l.dropped.Load() }

// Kill stops it as a killed daemon stops: the connection closes, the cache
// and the queue are gone.
func (l *linkSender) Kill() {
	l.cancel()
	<-l.done
}

func (l *linkSender) run(ctx context.Context) {
	defer close(l.done)
	for {
		conn := l.dial(ctx)
		if conn == nil {
			return
		}
		unhook := context.AfterFunc(ctx, func() { _ = conn.Close() }) // a blocked write ends with the daemon
		requests := make(chan struct{})
		stop := make(chan struct{})
		go l.scan(conn, requests, stop)
		l.serve(ctx, conn, requests)
		close(stop)
		unhook()
		_ = conn.Close()
		if ctx.Err() != nil {
			return
		}
	}
}

// dial tries until it connects or ctx ends: at once, then after 100 ms,
// doubling up to 5 s, without jitter, as ReconnectWithBackoff does.
func (l *linkSender) dial(ctx context.Context) net.Conn {
	bo := backoff.NewExponentialBackOff()
	bo.InitialInterval, bo.MaxInterval, bo.MaxElapsedTime, bo.RandomizationFactor = linkBackoffBase, linkBackoffMax, 0, 0
	bo.Reset()
	d := net.Dialer{Timeout: linkDialTimeout}
	for {
		if c, err := d.DialContext(ctx, "unix", l.addr); err == nil {
			return c
		}
		t := time.NewTimer(bo.NextBackOff())
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// scan reads the receiver's lines and signals each status_request; it
// returns when the connection fails.
func (l *linkSender) scan(conn net.Conn, requests chan<- struct{}, stop <-chan struct{}) {
	defer close(requests)
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		var m struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Type != "status_request" {
			continue
		}
		select {
		case requests <- struct{}{}:
		case <-stop:
			return
		}
	}
}

// serve writes queued changes and answers status requests until a write
// fails, the connection ends or ctx does. A change taken from the queue
// whose write fails is lost, as upstream's is.
func (l *linkSender) serve(ctx context.Context, conn net.Conn, requests <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-requests:
			if !ok || l.writeSnapshot(conn) != nil {
				return
			}
		case msg := <-l.out:
			if linkWrite(conn, msg.line) != nil {
				return
			}
		}
	}
}

// writeSnapshot writes every cached message, in map order, as upstream does.
func (l *linkSender) writeSnapshot(conn net.Conn) error {
	l.mu.Lock()
	msgs := make([]linkMsg, 0, len(l.store))
	for _, m := range l.store {
		msgs = append(msgs, m)
	}
	l.mu.Unlock()
	for _, m := range msgs {
		if err := linkWrite(conn, m.line); err != nil {
			return err
		}
	}
	return nil
}

func linkWrite(conn net.Conn, line []byte) error {
	if err := conn.SetWriteDeadline(time.Now().Add(linkWriteTimeout)); err != nil {
		return err
	}
	_, err := conn.Write(append(line[:len(line):len(line)], '\n'))
	return err
}
