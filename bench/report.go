package main

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// reporter is the producer's side of the report pipe (its stdout). Lines:
//
//	ready <unix ns>           the contender is open; producing starts
//	acc <producer> <end>      every event of producer below sequence end was handed over
//	produced <unix ns>        producing ended
//	idle <unix ns>            drained, now idle until told to finish (-signalled)
//	done <pending> <dropped>  drained (or gave up): events still held, events dropped
//	mem <objects>             heap objects allocated so far, at each SIGUSR2 (-signalled)
//
// acc lines are written every interval (reportEvery unless told), or after
// every batch when each is set, so that what a SIGKILLed producer had handed
// over is known exactly.
type reporter struct {
	w     io.Writer
	each  bool
	every time.Duration
	mu    sync.Mutex // one line per write
	ends  []atomic.Uint64
	sent  []uint64 // last end reported, under mu
	stop  chan struct{}
	done  chan struct{}
}

const reportEvery = 20 * time.Millisecond

func newReporter(w io.Writer, producers int, each bool, every time.Duration) *reporter {
	if every <= 0 {
		every = reportEvery
	}
	r := &reporter{w: w, each: each, every: every, ends: make([]atomic.Uint64, producers), sent: make([]uint64, producers),
		stop: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

func (r *reporter) line(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, format+"\n", args...)
}

// handed records that producer p handed over every event below end.
func (r *reporter) handed(p int, end uint64) {
	r.ends[p].Store(end)
	if r.each {
		r.flush()
	}
}

// flush writes an acc line for every producer that moved.
func (r *reporter) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.ends {
		if end := r.ends[p].Load(); end != r.sent[p] {
			fmt.Fprintf(r.w, "acc %d %d\n", p, end)
			r.sent[p] = end
		}
	}
}

func (r *reporter) loop() {
	defer close(r.done)
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.flush()
		case <-r.stop:
			r.flush()
			return
		}
	}
}

// close stops the ticker after a last flush.
func (r *reporter) close() {
	close(r.stop)
	<-r.done
}
