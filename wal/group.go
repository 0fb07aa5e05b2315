package wal

import (
	"sync"
	"time"

	"github.com/evspool/evspool/wal/clock"
)

// maxLinger bounds how long a leader waits for released callers (gather).
const maxLinger = 2 * time.Millisecond

// group gathers concurrent Appends into one transaction and fsync (group
// commit), with no goroutine: the first caller to find no commit running
// leads, commits the queue, then hands the lead to the next queued request.
// A leader first waits briefly for the callers the last commit released
// (gather), so callers appending in a loop form one group, not two: with
// 64 callers (the bench's concurrent scenario, fsync on) it delivers 1.9×
// the events a second of a leader that does not wait (evspool-fsync /
// evspool-fsync-noregroup, bench/README.md, backlog-55m1-2).
type group struct {
	clk      clock.Clock // Options.Clock
	mu       sync.Mutex
	queue    []*appendReq
	leading  bool
	reserved int64         // the cost of queued Block requests, held against the budget
	space    chan struct{} // closed (and replaced) whenever space is freed
	closed   chan struct{}

	out        int           // estimate of callers the last commit released not back yet
	lastCommit time.Duration // how long the last commit took
	released   time.Duration // clk.Boot() when it ended
	want       int           // how many queued requests a gathering leader waits for
	full       chan struct{} // closed once they are queued
}

// reqPool recycles appendReqs, keeping GC work out of the gap between commits.
var reqPool = sync.Pool{New: func() any { return &appendReq{wake: make(chan struct{}, 1)} }}

// newReq takes a request from the pool.
func newReq(events [][]byte) *appendReq {
	r := reqPool.Get().(*appendReq)
	r.events = events
	return r
}

// release returns r to the pool once its caller has read its result.
func (r *appendReq) release() {
	*r = appendReq{wake: r.wake}
	reqPool.Put(r)
}

type appendReq struct {
	events   [][]byte
	ops      []StateOp // what events do to the state (statekeys.go); nil: nothing
	cost     int64     // see entryCost
	size     uint64    // event bytes
	reserved bool
	wake     chan struct{} // signalled once: done, or made leader (cap 1, reused)
	lead     bool          // set before wake is signalled: commit the queue
	last     uint64
	err      error
}

func (g *group) init(clk clock.Clock) {
	g.clk = clk
	g.space = make(chan struct{})
	g.closed = make(chan struct{})
}

func (g *group) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.closed)
}

// freed wakes the Appends waiting for space. The caller may hold wmu: the
// group's lock is always taken after wmu, never before.
func (g *group) freed() {
	g.mu.Lock()
	close(g.space)
	g.space = make(chan struct{})
	g.mu.Unlock()
}

// run queues req and returns once it is committed or failed; the leader calls commit.
func (g *group) run(req *appendReq, commit func([]*appendReq)) {
	g.mu.Lock()
	g.queue = append(g.queue, req)
	g.out = max(g.out-1, 0)
	if g.full != nil && len(g.queue) >= g.want {
		close(g.full)
		g.full = nil
	}
	if g.leading {
		g.mu.Unlock()
		<-req.wake
		if !req.lead {
			return
		}
		g.mu.Lock()
	}
	g.leading = true
	g.gather()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	start := g.clk.Boot()
	commit(batch)
	end := g.clk.Boot()
	took := end - start

	g.mu.Lock()
	g.lastCommit, g.out, g.released = took, len(batch), end
	released := false
	for _, r := range batch {
		if r.reserved {
			g.reserved -= r.cost
			released = true
		}
	}
	if released {
		// The committed events no longer count twice: a waiter may fit.
		close(g.space)
		g.space = make(chan struct{})
	}
	if len(g.queue) > 0 {
		next := g.queue[0]
		next.lead = true
		next.wake <- struct{}{}
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	for _, r := range batch {
		if r != req {
			r.wake <- struct{}{} // r is its caller's again: not touched after
		}
	}
}

// gather runs in the leader, holding g.mu: it waits for callers the last
// commit released, at most half a commit's time (and maxLinger), unless a
// pause longer than a commit has passed since.
func (g *group) gather() {
	want := len(g.queue) + g.out
	if want <= len(g.queue) || g.lastCommit <= 0 || g.clk.Boot()-g.released > g.lastCommit {
		return
	}
	linger := min(g.lastCommit/2, maxLinger)
	g.want, g.full = want, make(chan struct{})
	full := g.full
	g.mu.Unlock()
	sleep(g.clk, linger, full, g.closed)
	g.mu.Lock()
	g.full, g.out = nil, 0 // who has not come back by now is not coming soon
}
