package main

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/evspool/evspool/internal/verify"
)

// TestCheckMatchesVerify feeds random deliveries (losses, replays, skips,
// foreign lines) to check and to internal/verify.Check and wants the same
// counts.
func TestCheckMatchesVerify(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		n := 1 + rng.IntN(60)
		sent := make([]string, n)
		for i := range sent {
			sent[i] = strconv.Itoa(1000 + i)
		}
		var got []string
		var arr []arrival
		for range rng.IntN(2 * n) {
			i := randomMove(rng, len(arr), arr, n)
			got = append(got, strconv.Itoa(1000+i))
			arr = append(arr, arrival{seq: uint64(1000 + i)})
		}
		want := verify.Check(sent, got)
		d := check(map[int][]span{0: {{base: 1000, end: uint64(1000 + n)}}}, arr)
		if d.Lost != int64(want.Missing) || d.Duplicates != int64(want.Duplicates) ||
			d.Jumps != int64(want.Reordered) || d.Foreign != int64(want.Foreign) {
			t.Fatalf("trial %d: check %+v, verify %v\ngot %v", trial, d, want, got)
		}
	}
}

// randomMove picks the next index: mostly the next one, sometimes a replay,
// a skip or a line that was never sent.
func randomMove(rng *rand.Rand, k int, arr []arrival, n int) int {
	last := -1
	if k > 0 {
		last = int(arr[k-1].seq) - 1000
	}
	switch r := rng.IntN(10); {
	case r < 6:
		return min(last+1, n-1)
	case r < 8:
		return rng.IntN(max(1, last+1))
	case r < 9:
		return min(last+1+rng.IntN(5), n-1)
	}
	return n + rng.IntN(3) // foreign
}

func TestCheckOutOfOrderAndSpans(t *testing.T) {
	sent := map[int][]span{0: {{0, 3}, {genStride, genStride + 2}}, 1: {{0, 2}}}
	arr := []arrival{{seq: 0}, {seq: 2}, {seq: 1}, {seq: genStride}, {seq: 0, prod: 1}, {seq: genStride + 1}, {seq: 1, prod: 1}, {seq: 5, prod: 2}}
	d := check(sent, arr)
	if d.Sent != 7 || d.Delivered != 7 || d.Lost != 0 || d.OutOfOrder != 1 || d.Jumps != 2 || d.Foreign != 1 {
		t.Fatalf("%+v", d)
	}
}

func TestEventRoundTrip(t *testing.T) {
	e := appendEvent(nil, 63, 1234567890)
	if len(e) != eventSize {
		t.Fatalf("event is %d bytes: %q", len(e), e)
	}
	p, s, ts, ok := parseEvent(e)
	if !ok || p != 63 || s != 1234567890 || ts <= 0 {
		t.Fatalf("parse %q: %d %d %d %v", e, p, s, ts, ok)
	}
	if _, _, _, ok := parseEvent(e[:50]); ok {
		t.Fatal("a torn line parsed")
	}
	altered := append([]byte(nil), e...)
	altered[eventSize-20] = '\t'
	if _, _, _, ok := parseEvent(altered); ok {
		t.Fatal("a line with an altered byte after its header parsed")
	}
}
