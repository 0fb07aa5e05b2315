package refrecv

import (
	"fmt"
	"sync"
	"time"
)

// Receiver is a line receiver listening on one address. Its methods are safe
// for concurrent use.
type Receiver struct {
	network string
	addr    string // the resolved address: a TCP port of 0 becomes the real one
	opts    Options
	rec     recorder

	mu       sync.Mutex
	run      *session // nil while stopped
	paused   bool
	resume   chan struct{} // closed by ResumeReading
	nextSlot time.Time     // pacing for Options.Rate
	reading  int           // reads in progress, see lineReader.gate
	idle     sync.Cond     // signalled when reading drops to 0; L is &mu
	accepted int
	connErrs []error
}

// Start listens on addr ("unix" path, or "tcp" host:port; port 0 picks one)
// and serves connections until Close or Kill. nil opts means defaults. A
// stale Unix socket file (one nobody listens on) is removed first.
func Start(network, addr string, opts *Options) (*Receiver, error) {
	r := &Receiver{network: network, addr: addr, opts: opts.withDefaults(), resume: make(chan struct{})}
	r.idle.L = &r.mu
	r.rec.countOnly, r.rec.out = r.opts.CountOnly, r.opts.Out
	if err := r.Restart(); err != nil {
		return nil, err
	}
	return r, nil
}

// Restart listens again on the same address after Close or Kill, removing
// the socket file a Kill left behind. Like a new process it reads at once,
// even if reading was paused before. Lines received before are kept.
func (r *Receiver) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run != nil {
		return fmt.Errorf("refrecv: restart %s %s: %w", r.network, r.addr, ErrRunning)
	}
	r.resumeLocked()
	ln, err := listen(r.network, r.addr)
	if err != nil {
		return err
	}
	r.addr = ln.Addr().String()
	r.run = newSession(ln)
	r.run.wg.Add(1)
	go r.acceptLoop(r.run)
	return nil
}

// Network returns the network the receiver listens on: "unix" or "tcp".
func (r *Receiver) Network() string { return r.network }

// Addr returns the address to dial: the socket path, or host:port with the
// port actually bound.
func (r *Receiver) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addr
}

// Conns returns how many connections are open now. With NeverRead it also
// counts connections whose peer has left, until Close or Kill.
func (r *Receiver) Conns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run == nil {
		return 0
	}
	return len(r.run.conns)
}

// Accepted returns how many connections were accepted since Start.
func (r *Receiver) Accepted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.accepted
}

// ConnErrors returns the errors that ended connections other than the peer
// closing or the receiver stopping, bufio.ErrTooLong for example.
func (r *Receiver) ConnErrors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.connErrs...)
}

// PauseReading stops reading from every connection, present and future,
// until ResumeReading or Restart, so that what peers send piles up in the
// socket buffers. It interrupts reads waiting for data and returns once they
// have returned, so nothing sent after it returns is read. Lines the scanner
// had already read are still recorded.
func (r *Receiver) PauseReading() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused = true
	if r.run != nil {
		for c := range r.run.conns {
			_ = c.SetReadDeadline(time.Now()) // wakes a blocked Read; see lineReader.Read
		}
	}
	for r.reading > 0 && r.paused {
		r.idle.Wait()
	}
}

// readDone uncounts a read that gate let through.
func (r *Receiver) readDone() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reading--
	if r.reading == 0 {
		r.idle.Broadcast()
	}
}

// ResumeReading undoes PauseReading.
func (r *Receiver) ResumeReading() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resumeLocked()
}

func (r *Receiver) resumeLocked() {
	if r.paused {
		r.paused = false
		close(r.resume)
		r.resume = make(chan struct{})
	}
}

func (r *Receiver) noteConnErr(err error) {
	r.mu.Lock()
	r.connErrs = append(r.connErrs, err)
	r.mu.Unlock()
	r.opts.Logger.Warn("connection ended with an error", "network", r.network, "addr", r.addr, "error", err)
}
