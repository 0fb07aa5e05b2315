package wal

import "sync"

// group gathers concurrent Appends into one transaction (group commit). The
// first caller to find no commit running becomes the leader: it commits
// everything queued so far in one transaction and one fsync, then hands the
// lead to the first request queued meanwhile. No goroutine, no timer: a lone
// caller commits at once, and under load a group forms while the previous
// commit is on its fsync.
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
}

type appendReq struct {
	events   [][]byte
	cost     int64  // see entryCost
	size     uint64 // event bytes
	reserved bool
	wake     chan struct{} // closed when done or when made leader
	lead     bool          // set before wake is closed: commit the queue
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
	req.wake = make(chan struct{})
	g.mu.Lock()
	g.queue = append(g.queue, req)
	if g.leading {
		g.mu.Unlock()
		<-req.wake
		if !req.lead {
			return
		}
		g.mu.Lock()
	}
	g.leading = true
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()

	commit(batch)

	g.mu.Lock()
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
		close(next.wake)
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	for _, r := range batch {
		if r != req {
			close(r.wake)
		}
	}
}
