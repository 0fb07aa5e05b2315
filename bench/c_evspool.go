package main

import (
	"context"
	"io"
	"time"

	"github.com/evspool/evspool/emitter"
)

// evspoolSender is the library as a daemon embeds it.
type evspoolSender struct{ em *emitter.Emitter }

func openEvspool(addr, dir string, fsync bool) (*evspoolSender, error) {
	return openEvspoolOpts(addr, dir, &emitter.Options{NoSync: !fsync})
}

// openEvspoolOpts opens the library with o and the bench's spool cap; the
// child's stdout is the report pipe, so nothing is echoed.
func openEvspoolOpts(addr, dir string, o *emitter.Options) (*evspoolSender, error) {
	c := *o
	c.MaxSpoolBytes, c.Stdout = spoolCap, io.Discard
	em, err := emitter.Open(addr, dir, &c)
	if err != nil {
		return nil, err
	}
	return &evspoolSender{em: em}, nil
}

// benchStateKey is evspool-fsync-keys' state key: 10 keys, from the
// last digit of the event's sequence number, so that every event renews
// one (a PTP node has a few dozen). Its own cost is a few nanoseconds;
// JSONStateKey's parse of a v2 message is priced apart (emitter's
// BenchmarkJSONStateKey).
func benchStateKey(event []byte) ([]byte, bool) {
	if len(event) < seqOff+seqLen {
		return nil, false
	}
	return event[seqOff+seqLen-1 : seqOff+seqLen], false
}

func (s *evspoolSender) Emit(ctx context.Context, events [][]byte) error {
	return s.em.Emit(ctx, events...)
}

func (s *evspoolSender) Drain(ctx context.Context) int {
	_ = s.em.Flush(ctx)
	return int(s.em.Stats().Pending)
}

func (s *evspoolSender) Dropped() uint64 { return s.em.Stats().Dropped }

func (s *evspoolSender) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.em.Close(ctx)
}

// Compactions counts the spool's compactions (Ack gives space back by
// copying the pending entries to a fresh file).
func (s *evspoolSender) Compactions() uint64 { return s.em.Stats().Spool.Compactions }
