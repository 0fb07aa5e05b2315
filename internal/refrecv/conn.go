package refrecv

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"time"
)

// serve reads lines from c until the peer closes, an error, or the session
// stops.
func (r *Receiver) serve(s *session, c net.Conn, id int) {
	defer s.wg.Done()
	defer r.forget(s, c)
	lr := &lineReader{r: r, s: s, c: c, stripCR: r.opts.StripCR}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, min(4096, r.opts.MaxLine)), r.opts.MaxLine)
	sc.Split(lr.split)
	for sc.Scan() {
		if !r.handle(s) {
			return // killed while handling: the line dies with the receiver
		}
		r.rec.record(sc.Bytes(), id)
		r.pace(s)
	}
	if err := sc.Err(); err != nil && !s.stopping() && !errors.Is(err, net.ErrClosed) {
		r.noteConnErr(err)
	}
}

// handle spends Options.HandleTime on one line; it reports false if the
// receiver was killed meanwhile.
func (r *Receiver) handle(s *session) bool {
	if spend(r.opts.HandleTime, s.stop) {
		return !s.killed
	}
	return true
}

// spend takes d, as handling a line does, or until stop is closed (then it
// reports true). A timer under a millisecond fires after about one here
// (the runtime's poller waits in whole milliseconds: a receiver "0.2 ms a
// line" handled 930 lines a second), so a wait under busyBelow is spent
// busy, as handling is.
func spend(d time.Duration, stop <-chan struct{}) (stopped bool) {
	if d <= 0 {
		return false
	}
	if d >= busyBelow {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return false
		case <-stop:
			return true
		}
	}
	for end := time.Now().Add(d); time.Now().Before(end); runtime.Gosched() {
		select {
		case <-stop:
			return true
		default:
		}
	}
	return false
}

// busyBelow is the shortest handling time spend waits for on a timer.
const busyBelow = 2 * time.Millisecond

// lineReader is the scanner's view of a connection: it holds reads while the
// receiver is paused and remembers why reading ended.
type lineReader struct {
	r        *Receiver
	s        *session
	c        net.Conn
	stripCR  bool
	err      error // the last read error
	draining bool  // reading on after Close: an EOF is ours, not the peer's
}

// Read waits while the receiver is paused, then reads from the connection.
func (lr *lineReader) Read(p []byte) (int, error) {
	for {
		if err := lr.gate(); err != nil {
			lr.err = err
			return 0, err
		}
		n, err := lr.c.Read(p)
		lr.r.readDone()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if lr.draining {
				err = io.EOF // Close's drain time is up
			} else if n == 0 {
				// PauseReading interrupted the read: clear its deadline and
				// let the gate hold the next one.
				_ = lr.c.SetReadDeadline(time.Time{})
				continue
			}
		}
		lr.err = err
		return n, err
	}
}

// gate blocks while reading is paused and the session runs. After Kill it
// fails; after Close it lets the drain through, paused or not. When it lets
// a read through, the read is counted (Receiver.reading) in the same critical
// section as the check, so PauseReading cannot miss it.
func (lr *lineReader) gate() error {
	r := lr.r
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		stopping := lr.s.stopping()
		switch {
		case stopping && lr.s.killed:
			return errKilled
		case stopping && !lr.draining:
			lr.draining = true
			_ = lr.c.SetReadDeadline(lr.s.drainBy)
		}
		if stopping || !r.paused {
			r.reading++
			return nil
		}
		resume := r.resume
		r.mu.Unlock()
		select {
		case <-resume:
		case <-lr.s.stop:
		}
		r.mu.Lock()
	}
}

// split cuts lines at '\n'. At the end of the stream it returns a last,
// unterminated line only if the peer closed: a line cut by Close or Kill was
// never finished by its sender.
func (lr *lineReader) split(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, lr.trim(data[:i]), nil
	}
	if atEOF && len(data) > 0 && errors.Is(lr.err, io.EOF) && !lr.draining {
		return len(data), lr.trim(data), nil
	}
	return 0, nil, nil
}

func (lr *lineReader) trim(line []byte) []byte {
	if lr.stripCR && len(line) > 0 && line[len(line)-1] == '\r' {
		return line[:len(line)-1]
	}
	return line
}

// pace waits for the next slot when Options.Rate is set. Slots are shared by
// all connections. A timer that fires late is made up by the slots after it,
// so the average holds; only a schedule more than 100 ms behind (the
// receiver was idle) starts afresh. Stopping the session ends the wait.
func (r *Receiver) pace(s *session) {
	if r.opts.Rate <= 0 {
		return
	}
	interval := time.Duration(float64(time.Second) / r.opts.Rate)
	r.mu.Lock()
	now := time.Now()
	slot := r.nextSlot
	if now.Sub(slot) > 100*time.Millisecond {
		slot = now
	}
	r.nextSlot = slot.Add(interval)
	r.mu.Unlock()
	if wait := slot.Sub(now); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.stop:
		}
	}
}
