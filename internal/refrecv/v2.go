package refrecv

import (
	"fmt"
	"net"
	"slices"
	"sync"
	"time"
)

// V2Options tunes a V2 receiver. The zero value means defaults.
type V2Options struct {
	// HandleTime is how long each line takes to handle once read. A line
	// read but not yet handled is lost on Kill, as in the proxy, whose
	// scanner reads ahead. Default 0.
	HandleTime time.Duration
	// WriteBackEvery, if positive, makes the receiver write WriteBack to
	// the sender after every WriteBackEvery lines it handles, with a
	// blocking write (no deadline): a sender that never reads fills the
	// socket buffers, the write blocks and the receiver stops reading.
	// Default 0: it writes only the status request.
	WriteBackEvery int
	// WriteBack is the line written back, without its newline. Default
	// {"version":1,"type":"ack"}.
	WriteBack string
}

// defaultWriteBack is V2Options.WriteBack's default.
const defaultWriteBack = `{"version":1,"type":"ack"}`

// V2 is a receiver that behaves like linuxptp-daemon's cloud-event-proxy
// v2 (cmd/cloud-event-proxy, pkg/cep): it listens on a Unix socket, serves
// one connection at a time (the next is accepted only once the previous
// ended), writes a status request on each with a 5 s deadline (dropping
// the connection if that fails), reads NDJSON with a default bufio.Scanner
// and keeps a V2Cache, publishing a key only when its value changed. Kill
// forgets the cache, as a restarted proxy starts empty; what it published
// is kept (a subscriber's view). Its methods are safe for concurrent use;
// its lock guards the cache, the counts and the current session.
type V2 struct {
	path string
	opts V2Options

	mu         sync.Mutex
	run        *v2Session // nil while killed
	cache      *V2Cache
	published  []V2Publish
	lines      int
	unparsable int
	accepted   int
	written    int // lines written back, status requests included
}

// v2Session is one period of listening, from Start or Restart to Kill.
type v2Session struct {
	ln   net.Listener
	conn net.Conn // the connection being served, guarded by V2.mu
	stop chan struct{}
	done chan struct{} // closed when the accept loop returned
}

// StartV2 listens on the Unix socket path, removing a stale socket file
// first, and serves until Kill. nil opts means defaults.
func StartV2(path string, opts *V2Options) (*V2, error) {
	v := &V2{path: path, cache: NewV2Cache()}
	if opts != nil {
		v.opts = *opts
	}
	if v.opts.WriteBack == "" {
		v.opts.WriteBack = defaultWriteBack
	}
	if err := v.Restart(); err != nil {
		return nil, err
	}
	return v, nil
}

// Restart listens again on the same path after Kill, with an empty cache.
func (v *V2) Restart() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.run != nil {
		return fmt.Errorf("refrecv: restart v2 %s: %w", v.path, ErrRunning)
	}
	ln, err := listen("unix", v.path)
	if err != nil {
		return err
	}
	v.run = &v2Session{ln: ln, stop: make(chan struct{}), done: make(chan struct{})}
	go v.acceptLoop(v.run)
	return nil
}

// Kill drops the listener and the connection at once, loses the lines read
// but not handled and forgets the cache. It leaves the socket file behind,
// like a crashed process. Killing a killed receiver does nothing.
func (v *V2) Kill() {
	v.mu.Lock()
	s := v.run
	v.run = nil
	if s != nil {
		close(s.stop)
		if ul, ok := s.ln.(*net.UnixListener); ok {
			ul.SetUnlinkOnClose(false)
		}
		_ = s.ln.Close()
		if s.conn != nil {
			_ = s.conn.Close()
		}
	}
	v.cache = NewV2Cache()
	v.mu.Unlock()
	if s != nil {
		<-s.done
	}
}

// Path returns the socket path.
func (v *V2) Path() string { return v.path }

// Current returns the cache: every key's value as the proxy keeps it.
func (v *V2) Current() map[V2Key]string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cache.Current()
}

// Published returns every publish since StartV2, in order, across restarts.
func (v *V2) Published() []V2Publish {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.published)
}

// Lines returns how many lines were handled since StartV2.
func (v *V2) Lines() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.lines
}

// Unparsable returns how many handled lines were not JSON or not version 1.
func (v *V2) Unparsable() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.unparsable
}

// Accepted returns how many connections were accepted since StartV2.
func (v *V2) Accepted() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.accepted
}

// Written returns how many lines were written to senders: status requests
// and write-backs.
func (v *V2) Written() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.written
}
