package emitter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/evspool/evspool/wal"
)

func entries(from uint64, n, size int) []wal.Entry {
	out := make([]wal.Entry, n)
	for i := range out {
		out[i] = wal.Entry{Seq: from + uint64(i), Data: make([]byte, size-1)} // size with the newline
	}
	return out
}

func TestWindowDue(t *testing.T) {
	t0 := time.Now()
	const linger = time.Second
	tests := map[string]struct {
		reads      [][]wal.Entry // each read at t0
		at         time.Duration
		bytes      uint64
		oneAtATime bool
		want       [2]int // proven, all
	}{
		"nothing read":                   {nil, 0, 100, false, [2]int{0, 0}},
		"all within the window":          {[][]wal.Entry{entries(1, 5, 10)}, 0, 100, false, [2]int{0, 0}},
		"read 100 bytes after the first": {[][]wal.Entry{entries(1, 11, 10)}, 0, 100, false, [2]int{1, 1}},
		"a later read pushes them out":   {[][]wal.Entry{entries(1, 5, 10), entries(6, 20, 10)}, 0, 100, false, [2]int{15, 15}},
		"linger passed":                  {[][]wal.Entry{entries(1, 5, 10)}, linger, 100, false, [2]int{0, 5}},
		"linger not yet passed":          {[][]wal.Entry{entries(1, 5, 10)}, linger - time.Millisecond, 100, false, [2]int{0, 0}},
		"window off":                     {[][]wal.Entry{entries(1, 5, 10)}, 0, 0, false, [2]int{5, 5}},
		"one at a time keeps the last":   {[][]wal.Entry{entries(1, 1, 10), entries(2, 1, 10), entries(3, 1, 10)}, 0, 1 << 20, true, [2]int{2, 2}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var w window
			for _, r := range tc.reads {
				w.add(r, t0, tc.oneAtATime)
			}
			proven, all := w.due(t0.Add(tc.at), tc.bytes, linger)
			assert.Equal(t, tc.want, [2]int{proven, all})
		})
	}
}

func TestWindowDropAndNext(t *testing.T) {
	var w window
	_, ok := w.next(time.Second)
	assert.False(t, ok)
	t0 := time.Now()
	w.add(entries(7, 3, 10), t0, false)
	assert.EqualValues(t, 7, w.oldest())
	assert.EqualValues(t, 8, w.drop(2).seq)
	assert.EqualValues(t, 9, w.oldest())
	at, ok := w.next(time.Second)
	assert.True(t, ok)
	assert.Equal(t, t0.Add(time.Second), at)
	w.reset()
	assert.Zero(t, w.oldest())
}
