package wal

import (
	"sync"
	"time"
)

// maxLinger bounds how long a leader waits for the callers the last commit
// released (see gather).
const maxLinger = 2 * time.Millisecond

// group gathers concurrent Appends into one transaction (group commit). The
// first caller to find no commit running becomes the leader: it commits
// everything queued so far in one transaction and one fsync, then hands the
// lead to the first request queued meanwhile. No goroutine: a lone caller
// commits at once, and under load a group forms while the previous commit is
// on its fsync.
//
// Left at that, N callers that each append in a loop split into two groups
// of N/2 that take turns: one commits while the other queues. So a leader
// first waits, briefly, for the callers the last commit released and that
// have not come back yet (see gather): they merge into one group of N, one
// fsync for all.
type group struct {
	mu      sync.Mutex
	queue   []*appendReq
	leading bool
	// reserved is the cost of queued Block-policy requests, counted against
	// the budget before they are committed so that they are sure to fit.
	reserved int64
	// space is closed (and replaced) whenever space is freed.
	space  chan struct{}
	closed chan struct{}

	// out is how many requests the last commit released that have not come
	// back (an estimate: any arrival counts as one of them).
	out int
	// lastCommit is how long the last commit took, released when it ended.
	lastCommit time.Duration
	released   time.Time
	// A leader gathering waits until the queue holds want requests: the
	// arrival that makes it so closes full.
	want int
	full chan struct{}
	// regroup is open from a commit's release of two or more callers until
	// the next commit takes its batch (see awaitRegroup); regroupBy is when
	// waiting for that stops being worth it.
	regroup   chan struct{}
	regroupBy time.Time
}

// reqPool recycles appendReqs with their wake channels: 64 one-event
// callers allocated both at every call, and the garbage collector's work
// ran in the gap between commits, where the callers' way back sets the pace.
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
	cost     int64  // see entryCost
	size     uint64 // event bytes
	reserved bool
	wake     chan struct{} // signalled once: done, or made leader (cap 1, reused)
	lead     bool          // set before wake is signalled: commit the queue
	last     uint64
	err      error
}

func (g *group) init() {
	g.space = make(chan struct{})
	g.closed = make(chan struct{})
}

func (g *group) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.closed)
	g.regrouped()
}

// awaitRegroup holds a reader back while the callers the last commit
// released are on their way back to the next one: at most until that
// commit starts, a commit and a half after the last one ended (2 ms at
// most). A reader that runs in that window takes the CPU the callers need,
// and the commit waits for the slowest of them; during the commit the CPU
// is idle, waiting on fsync. A lone caller's commit releases no group.
func (g *group) awaitRegroup() {
	g.mu.Lock()
	started, wait := g.regroup, time.Until(g.regroupBy)
	g.mu.Unlock()
	if started == nil || wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-started:
	case <-t.C:
	}
}

// regrouped ends the regrouping window. The caller holds g.mu.
func (g *group) regrouped() {
	if g.regroup != nil {
		close(g.regroup)
		g.regroup = nil
	}
}

// freed wakes the Appends waiting for space. The caller may hold wmu: the
// group's lock is always taken after wmu, never before.
func (g *group) freed() {
	g.mu.Lock()
	close(g.space)
	g.space = make(chan struct{})
	g.mu.Unlock()
}

// run queues req and returns once it is committed or has failed. commit is
// called by whichever caller leads, with the batch to commit.
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
	g.regrouped()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	start := time.Now()
	commit(batch)
	took := time.Since(start)

	g.mu.Lock()
	g.lastCommit, g.out, g.released = took, len(batch), time.Now()
	if len(batch) > 1 {
		// The next leader arrives within lastCommit or not soon (see
		// gather), then lingers at most half of it.
		g.regrouped()
		g.regroup, g.regroupBy = make(chan struct{}), g.released.Add(min(took+took/2, maxLinger))
	}
	released := false
	for _, r := range batch {
		if r.reserved {
			g.reserved -= r.cost
			released = true
		}
	}
	if released {
		// Until now the committed events counted twice, as stored cost and
		// as reservation: a waiter that looked meanwhile may fit now.
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

// gather runs in the leader, holding g.mu, before it takes the queue: if the
// last commit released callers that have not come back, it waits for them
// to queue, at most half a commit's time (and maxLinger). Callers appending
// in a loop are back within microseconds, and waiting for them halves the
// fsyncs. A lone caller never waits, nor does the first caller after a
// pause longer than a commit (the others are not coming soon).
func (g *group) gather() {
	want := len(g.queue) + g.out
	if want <= len(g.queue) || g.lastCommit <= 0 || time.Since(g.released) > g.lastCommit {
		return
	}
	linger := min(g.lastCommit/2, maxLinger)
	g.want, g.full = want, make(chan struct{})
	full := g.full
	g.mu.Unlock()
	t := time.NewTimer(linger)
	select {
	case <-full:
	case <-t.C:
	case <-g.closed:
	}
	t.Stop()
	g.mu.Lock()
	g.full, g.out = nil, 0 // who has not come back by now is not coming soon
}
