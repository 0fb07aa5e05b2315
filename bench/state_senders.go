package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/evspool/evspool/internal/refrecv"
)

// The state scenario's contenders.
const (
	sEvspoolState = "evspool-state" // evspool run with state keys: --state-key type,profile,iface
	sEvspool      = "evspool"       // evspool run without them
	sEvspoolBase  = "evspool-base"  // evspool run without them, built at -baseline
	sLink         = "link"          // built like the daemon's ipc.Cache + Link
	sReconnect    = "reconnect-only"
)

var stateContenders = []string{sEvspoolState, sEvspool, sLink, sReconnect}

// stateSender is a contender as the state scenario drives it: a daemon
// that sends v2 messages and can be killed and started again.
type stateSender interface {
	// send hands one message line (no newline) over.
	send(line []byte) error
	// kill stops the sender as SIGKILL stops a daemon.
	kill()
	// restart starts it again after kill, on the same spool.
	restart() error
	// close ends it at the end of a run.
	close()
	// dropped counts messages it gave up on by design.
	dropped() uint64
}

// evspoolBins are the cmd/evspool binaries built for a run: the
// repository's, and the baseline's (-baseline) if any.
type evspoolBins struct{ cur, base string }

// openStateSender starts contender name towards the receiver at sock;
// startStatePair starts a v2 receiver and opens contender towards it, in a
// directory of their own under tmp; stop closes the sender, kills the
// receiver and removes the directory.
func startStatePair(tmp, prefix string, opts *refrecv.V2Options, contender string, bins evspoolBins) (*refrecv.V2, stateSender, func(), error) {
	dir, err := os.MkdirTemp(tmp, prefix)
	if err != nil {
		return nil, nil, nil, err
	}
	v, err := refrecv.StartV2(filepath.Join(dir, "v2.sock"), opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	s, err := openStateSender(contender, v.Path(), filepath.Join(dir, "spool"), bins)
	if err != nil {
		v.Kill()
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	return v, s, func() {
		s.close()
		v.Kill()
		os.RemoveAll(dir)
	}, nil
}

// spool is the evspool contenders'.
func openStateSender(name, sock, spool string, bins evspoolBins) (stateSender, error) {
	switch name {
	case sEvspoolState:
		return startEvspoolProc(bins.cur, sock, spool, true)
	case sEvspool:
		return startEvspoolProc(bins.cur, sock, spool, false)
	case sEvspoolBase:
		return startEvspoolProc(bins.base, sock, spool, false)
	case sEvspoolLib:
		return openEvspoolLib(sock, spool)
	case sLink:
		return &linkState{sock: sock, l: newLinkSender(sock)}, nil
	case sReconnect:
		return &reconnectState{sock: sock, r: newReconnectOnly(sock)}, nil
	}
	return nil, fmt.Errorf("bench state: unknown contender %q", name)
}

// linkState drives a linkSender; a killed one loses its cache and queue.
type linkState struct {
	sock string
	l    *linkSender
	gone uint64 // dropped by the instances killed before
}

func (s *linkState) send(line []byte) error { s.l.Send(line); return nil }
func (s *linkState) kill()                  { s.l.Kill(); s.gone += s.l.Dropped() }
func (s *linkState) restart() error         { s.l = newLinkSender(s.sock); return nil }
func (s *linkState) close()                 { s.l.Kill() }
func (s *linkState) dropped() uint64        { return s.gone + s.l.Dropped() }

// reconnectState drives reconnect-only; a killed one just closes.
type reconnectState struct {
	sock string
	r    *reconnectOnly
	gone uint64
}

func (s *reconnectState) send(line []byte) error {
	return s.r.Emit(context.Background(), [][]byte{line})
}
func (s *reconnectState) kill()           { _ = s.r.Close(); s.gone += s.r.Dropped() }
func (s *reconnectState) restart() error  { s.r = newReconnectOnly(s.sock); return nil }
func (s *reconnectState) close()          { _ = s.r.Close() }
func (s *reconnectState) dropped() uint64 { return s.gone + s.r.Dropped() }
