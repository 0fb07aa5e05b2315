package main

import (
	"sort"
	"sync"
	"time"
)

// arrival is one line the receiver read.
type arrival struct {
	seq    uint64
	emitNs int64 // when the producer handed the event over
	atNs   int64 // when the receiver read it
	prod   uint16
}

// collector is the receiver's Out: refrecv calls Write once per line, in
// arrival order, and the collector keeps 32 bytes per line instead of the
// line itself, in fixed-size chunks so that growing never copies (a copy of
// hundreds of MiB under the lock would stall the receiver).
type collector struct {
	mu           sync.Mutex
	chunks       [][]arrival
	n            int
	foreign      int
	firstForeign string

	// interval, when set, paces the receiver: Write is called while
	// refrecv records the line, so sleeping here holds its reading back.
	interval time.Duration
	next     time.Time
}

// paceDebt bounds how far a paced receiver catches up after a stall.
const paceDebt = 50 * time.Millisecond

const chunkLen = 1 << 16

func (c *collector) Write(p []byte) (int, error) {
	at := time.Now().UnixNano()
	line := p
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	prod, seq, emit, ok := parseEvent(line)
	c.mu.Lock()
	if ok {
		if c.n%chunkLen == 0 {
			c.chunks = append(c.chunks, make([]arrival, 0, chunkLen))
		}
		last := &c.chunks[len(c.chunks)-1]
		*last = append(*last, arrival{seq: seq, emitNs: emit, atNs: at, prod: uint16(prod)})
		c.n++
	} else {
		if c.foreign == 0 {
			c.firstForeign = string(line)
		}
		c.foreign++
	}
	c.mu.Unlock()
	c.pace()
	return len(p), nil
}

// pace sleeps off the receiver's lead over its rate, in steps of at least a
// millisecond and carrying the remainder, so that timer overshoot does not
// lower the rate (refrecv's Options.Rate sleeps per line and loses it).
func (c *collector) pace() {
	if c.interval <= 0 {
		return
	}
	now := time.Now()
	if c.next.Before(now.Add(-paceDebt)) {
		c.next = now
	}
	c.next = c.next.Add(c.interval)
	if lead := c.next.Sub(now); lead >= time.Millisecond {
		time.Sleep(lead)
	}
}

// count returns how many of our lines arrived so far.
func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// take returns the arrivals, in one slice, the count of foreign lines and
// the first of them.
func (c *collector) take() ([]arrival, int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]arrival, 0, c.n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	c.chunks = nil
	return out, c.foreign, c.firstForeign
}

// firstAfter returns the index of the first arrival at or after ns.
func firstAfter(arr []arrival, ns int64) int {
	return sort.Search(len(arr), func(i int) bool { return arr[i].atNs >= ns })
}
