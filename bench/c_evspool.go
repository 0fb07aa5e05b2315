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
	em, err := emitter.Open(addr, dir, &emitter.Options{
		NoSync:        !fsync,
		MaxSpoolBytes: spoolCap,
		Stdout:        io.Discard, // the child's stdout is the report pipe
	})
	if err != nil {
		return nil, err
	}
	return &evspoolSender{em: em}, nil
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
