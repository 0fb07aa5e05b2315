package main

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/evspool/evspool/emitter"
)

// sEvspoolLib is the library in process with state keys, as a daemon
// embeds it; its OnReceive counts the lines the receiver writes back. It
// cannot be killed, so only the writeback case runs it.
const sEvspoolLib = "evspool-state-lib"

// evspoolLib is the emitter with the v2 settings.
type evspoolLib struct {
	em       *emitter.Emitter
	received atomic.Int64 // lines handed to OnReceive
}

func openEvspoolLib(sock, spool string) (*evspoolLib, error) {
	l := &evspoolLib{}
	em, err := emitter.Open(sock, spool, &emitter.Options{
		NoSync:       true,
		Stdout:       io.Discard,
		StateKey:     emitter.JSONStateKey([]string{"type", "profile", "iface"}, "cache_clear"),
		StateRequest: emitter.JSONType("status_request"),
		OnReceive:    func([]byte) { l.received.Add(1) },
		ReleaseIdle:  time.Second,
	})
	if err != nil {
		return nil, err
	}
	l.em = em
	return l, nil
}

func (l *evspoolLib) send(line []byte) error { return l.em.Emit(context.Background(), line) }
func (l *evspoolLib) kill()                  {}
func (l *evspoolLib) restart() error {
	return errors.New("bench state: the in-process library cannot be killed; it runs in the writeback case only")
}
func (l *evspoolLib) dropped() uint64 { return l.em.Stats().Dropped }

// receivedBack counts the receiver's lines the embedder was handed, the
// status requests answered by the emitter itself excluded.
func (l *evspoolLib) receivedBack() int64 { return l.received.Load() }

func (l *evspoolLib) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = l.em.Close(ctx)
}
