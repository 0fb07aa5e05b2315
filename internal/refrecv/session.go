package refrecv

import (
	"errors"
	"net"
	"sync"
	"time"
)

// session is one period of listening, from Start or Restart to Close or Kill.
type session struct {
	ln      net.Listener
	conns   map[net.Conn]struct{} // guarded by Receiver.mu
	wg      sync.WaitGroup
	stop    chan struct{} // closed by Close and Kill
	killed  bool          // set before stop is closed
	drainBy time.Time     // set before stop is closed: when Close gives up reading
}

func newSession(ln net.Listener) *session {
	return &session{ln: ln, conns: make(map[net.Conn]struct{}), stop: make(chan struct{})}
}

func (s *session) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// acceptLoop accepts connections until the listener is closed.
func (r *Receiver) acceptLoop(s *session) {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.stopping() || errors.Is(err, net.ErrClosed) {
				return
			}
			r.opts.Logger.Warn("accept failed", "addr", r.addr, "error", err)
			select { // EMFILE and the like: do not spin
			case <-s.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		r.adopt(s, c)
	}
}

// adopt registers a new connection and starts serving it, unless the
// session is already stopping.
func (r *Receiver) adopt(s *session, c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.stopping() {
		_ = c.Close()
		return
	}
	r.accepted++
	s.conns[c] = struct{}{}
	if r.opts.NeverRead {
		return
	}
	s.wg.Add(1)
	go r.serve(s, c, r.accepted)
}

// forget closes c and drops it from the session.
func (r *Receiver) forget(s *session, c net.Conn) {
	_ = c.Close()
	r.mu.Lock()
	delete(s.conns, c)
	r.mu.Unlock()
}

// detach ends the current session for Close or Kill and returns it with a
// snapshot of its connections, or nil if the receiver is not listening.
func (r *Receiver) detach(killed bool) (*session, []net.Conn) {
	drainBy := time.Now().Add(r.opts.DrainTimeout)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.run
	if s == nil {
		return nil, nil
	}
	r.run = nil
	s.killed, s.drainBy = killed, drainBy
	close(s.stop)
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return s, conns
}

// Close stops listening, removes a Unix socket file, reads and records what
// peers had already sent (up to Options.DrainTimeout; nothing with
// NeverRead), then closes every connection. Peers writing after that get
// EPIPE. Close on a stopped receiver returns nil.
func (r *Receiver) Close() error {
	s, conns := r.detach(false)
	if s == nil {
		return nil
	}
	err := s.ln.Close()
	for _, c := range conns {
		cr, ok := c.(interface{ CloseRead() error })
		if r.opts.NeverRead || !ok {
			_ = c.Close()
			continue
		}
		// Reads now return what is buffered, then EOF; the readers set
		// their own drain deadline (lineReader.gate).
		_ = cr.CloseRead()
	}
	s.wg.Wait()
	return ignoreClosed(err)
}

// Kill stops like a crashed process: it closes every connection without
// reading what is buffered (TCP peers get a reset, Unix peers with unread
// data ECONNRESET) and leaves a Unix socket file behind. Lines already read from a socket are
// still recorded. Kill on a stopped receiver returns nil.
func (r *Receiver) Kill() error {
	s, conns := r.detach(true)
	if s == nil {
		return nil
	}
	if ul, ok := s.ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	err := s.ln.Close()
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
	s.wg.Wait()
	return ignoreClosed(err)
}

func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
