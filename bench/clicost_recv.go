package main

import (
	"bufio"
	"net"
	"os"
	"sync"
	"time"
)

// countingReceiver is cli-cost's receiver: it listens on a Unix stream
// socket and reads each connection with a default bufio.Scanner, as
// cloud-event-proxy does, and keeps the sequence numbers it got, so that a
// side that stalled or lost lines shows as incomplete rather than cheap.
// It lives in the bench so that cli-cost depends only on the CLI.
type countingReceiver struct {
	ln net.Listener

	mu      sync.Mutex
	n       int64           // lines read
	seen    map[uint64]bool // sequence numbers of well-formed lines
	changed chan struct{}   // closed and replaced after each line
	conns   []net.Conn
	wg      sync.WaitGroup
}

func startCountingReceiver(sock string) (*countingReceiver, error) {
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	r := &countingReceiver{ln: ln, seen: map[uint64]bool{}, changed: make(chan struct{})}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

func (r *countingReceiver) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.conns = append(r.conns, c)
		r.mu.Unlock()
		r.wg.Add(1)
		go r.serve(c)
	}
}

func (r *countingReceiver) serve(c net.Conn) {
	defer r.wg.Done()
	defer c.Close()
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		_, seq, _, ok := parseEvent(sc.Bytes())
		r.mu.Lock()
		r.n++
		if ok {
			r.seen[seq] = true
		}
		close(r.changed)
		r.changed = make(chan struct{})
		r.mu.Unlock()
	}
}

// lines is the count of lines read so far.
func (r *countingReceiver) lines() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// counts are the distinct well-formed lines and the rest (duplicates and
// foreign lines).
func (r *countingReceiver) counts() (distinct, extra int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(len(r.seen)), r.n - int64(len(r.seen))
}

// waitFor waits until n distinct lines have arrived, or d has passed.
func (r *countingReceiver) waitFor(n int64, d time.Duration) {
	deadline := time.After(d)
	for {
		r.mu.Lock()
		got, ch := int64(len(r.seen)), r.changed
		r.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			return
		}
	}
}

// close stops listening, ends every connection and waits for the readers.
func (r *countingReceiver) close() {
	_ = r.ln.Close()
	r.mu.Lock()
	for _, c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}
