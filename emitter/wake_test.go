package emitter

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/evspool/evspool/wal"
)

// woken reports whether d has a wake-up pending, and takes it.
func woken(d *drainer) bool {
	select {
	case <-d.wake:
		return true
	default:
		return false
	}
}

// The callers of one group commit return one by one: only those whose events
// the drainer has not read yet wake it.
func TestNotifyForSkipsWhatTheDrainerRead(t *testing.T) {
	t.Parallel()
	d := &drainer{link: &link{wake: make(chan struct{}, 1)}}
	d.notifyFor(one(1))
	assert.True(t, woken(d), "nothing read yet: wake")

	d.noteRead(entries(1, 64, 10)) // the drainer read the whole commit, 1..64
	for last := uint64(1); last <= 64; last++ {
		d.notifyFor(one(last))
		assert.False(t, woken(d), "event %d was read: no wake-up", last)
	}
	d.notifyFor(one(65))
	assert.True(t, woken(d), "a later commit wakes it")

	d.noteRead(nil) // an empty Read does not move the mark
	d.notifyFor(one(65))
	assert.True(t, woken(d))

	d.noteRead(entries(10, 1, 10)) // a resend from older events does not lower it
	d.notifyFor(one(64))
	assert.False(t, woken(d))

	d.ctl.readTo.Store(0) // what onConnect does: a new connection forgets the mark
	d.notifyFor(one(1))
	assert.True(t, woken(d))
}

// one is a commit of one event, numbered seq.
func one(seq uint64) committed { return committed{first: seq, events: [][]byte{[]byte("e")}} }

// entries returns n entries numbered from, each size bytes with its newline.
func entries(from uint64, n, size int) []wal.Entry {
	out := make([]wal.Entry, n)
	for i := range out {
		out[i] = wal.Entry{Seq: from + uint64(i), Data: make([]byte, size-1)}
	}
	return out
}
