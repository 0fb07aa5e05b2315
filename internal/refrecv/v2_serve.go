package refrecv

import (
	"bufio"
	"errors"
	"io"
	"net"
	"time"
)

// v2RequestTimeout is the write deadline of the status request, the
// proxy's.
const v2RequestTimeout = 5 * time.Second

// acceptLoop serves one connection at a time until the session stops: the
// next connection waits in the listen backlog until the current one ends.
func (v *V2) acceptLoop(s *v2Session) {
	defer close(s.done)
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if v2Stopping(s) || errors.Is(err, net.ErrClosed) {
				return
			}
			select { // EMFILE and the like: do not spin
			case <-s.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if !v.adopt(s, c) {
			_ = c.Close()
			return
		}
		v.serveConn(s, c)
		v.drop(s, c)
	}
}

func v2Stopping(s *v2Session) bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// adopt makes c the session's connection, unless the session was killed.
func (v *V2) adopt(s *v2Session, c net.Conn) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.run != s {
		return false
	}
	s.conn = c
	v.accepted++
	return true
}

// drop closes c, as the proxy does once Listen returns.
func (v *V2) drop(s *v2Session, c net.Conn) {
	_ = c.Close()
	v.mu.Lock()
	if s.conn == c {
		s.conn = nil
	}
	v.mu.Unlock()
}

// serveConn asks for the status, then reads and handles lines until EOF, an
// error or Kill.
func (v *V2) serveConn(s *v2Session, c net.Conn) {
	if !v.writeLine(c, v2StatusRequest, v2RequestTimeout) {
		return // the proxy drops a connection it cannot ask
	}
	back := v.opts.WriteBack + "\n"
	sc := bufio.NewScanner(c)
	handled := 0
	for sc.Scan() {
		if spend(v.opts.HandleTime, s.stop) || !v.handle(s, sc.Bytes()) {
			return // killed: the line dies with the receiver
		}
		handled++
		if n := v.opts.WriteBackEvery; n > 0 && handled%n == 0 && !v.writeLine(c, back, 0) {
			return
		}
	}
}

// writeLine writes line to c within timeout (0: no deadline, the write
// blocks until the peer reads or the connection ends) and counts it.
func (v *V2) writeLine(c net.Conn, line string, timeout time.Duration) bool {
	var by time.Time
	if timeout > 0 {
		by = time.Now().Add(timeout)
	}
	if c.SetWriteDeadline(by) != nil {
		return false
	}
	if _, err := io.WriteString(c, line); err != nil {
		return false
	}
	v.mu.Lock()
	v.written++
	v.mu.Unlock()
	return true
}

// handle applies one line to the cache, unless the session was killed
// since the line was read.
func (v *V2) handle(s *v2Session, line []byte) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.run != s {
		return false
	}
	v.lines++
	switch out, p := v.cache.Handle(line); out {
	case V2Unparsable:
		v.unparsable++
	case V2Published:
		p.At = time.Now()
		v.published = append(v.published, p)
	}
	return true
}
