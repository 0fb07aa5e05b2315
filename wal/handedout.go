package wal

import (
	"sync"
	"sync/atomic"
)

// handedOut is how far Read handed events out. DropOldest keeps those
// events (they may be on their way to a receiver, and what the receiver
// handles is delivered, not dropped) and drops the oldest after them; so
// the spool may exceed its budget by what its reader holds and has not yet
// acknowledged (one read batch and the events in flight).
type handedOut struct {
	// mu is held shared by Read from its transaction until it noted what
	// it returned, and exclusively by a commit from the moment it drops
	// until it ends: a dropping commit sees every Read that saw the events
	// it could drop, and a later Read sees the drop.
	mu      sync.RWMutex
	through atomic.Uint64 // the newest sequence number Read returned
}

// note records that Read returned events through seq; the caller holds mu
// shared.
func (h *handedOut) note(seq uint64) {
	for {
		was := h.through.Load()
		if seq <= was || h.through.CompareAndSwap(was, seq) {
			return
		}
	}
}

// holdForDrop takes mu for a dropping commit (released by release) and
// returns the newest sequence number handed out.
func (h *handedOut) holdForDrop(held *bool) uint64 {
	if !*held {
		h.mu.Lock()
		*held = true
	}
	return h.through.Load()
}

// release ends what holdForDrop began.
func (h *handedOut) release(held *bool) {
	if *held {
		*held = false
		h.mu.Unlock()
	}
}
