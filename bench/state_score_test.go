package main

import (
	"testing"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

func TestScorePublishes(t *testing.T) {
	eth0 := refrecv.V2Key{Type: "ptp_state", Iface: "eth0"}
	eth1 := refrecv.V2Key{Type: "ptp_state", Iface: "eth1"}
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	pub := func(k refrecv.V2Key, v string, s int) refrecv.V2Publish {
		return refrecv.V2Publish{Key: k, Values: v, Timestamp: at(s)}
	}
	// eth0: LOCKED at 1, HOLDOVER at 5, LOCKED at 9; eth1: LOCKED at 2.
	ref := []refrecv.V2Publish{pub(eth0, "LOCKED", 1), pub(eth1, "LOCKED", 2), pub(eth0, "HOLDOVER", 5), pub(eth0, "LOCKED", 9)}
	tests := map[string]struct {
		got  []refrecv.V2Publish
		want pubScore
	}{
		"the reference itself": {got: ref, want: pubScore{Reference: 4, Published: 4}},
		"nothing":              {want: pubScore{Reference: 4, Missing: 4}},
		"a transition late, by a re-send before the next one": {
			got:  []refrecv.V2Publish{pub(eth0, "LOCKED", 1), pub(eth1, "LOCKED", 2), pub(eth0, "HOLDOVER", 7), pub(eth0, "LOCKED", 9)},
			want: pubScore{Reference: 4, Published: 4},
		},
		"a transition lost": {
			got:  []refrecv.V2Publish{pub(eth0, "LOCKED", 1), pub(eth1, "LOCKED", 2)},
			want: pubScore{Reference: 4, Published: 2, Missing: 2},
		},
		"a restart announces again": {
			got:  append(append([]refrecv.V2Publish(nil), ref...), pub(eth1, "LOCKED", 10), pub(eth0, "LOCKED", 11)),
			want: pubScore{Reference: 4, Published: 6, Extra: 2},
		},
		"an older change after a newer one": {
			got:  []refrecv.V2Publish{pub(eth0, "LOCKED", 1), pub(eth1, "LOCKED", 2), pub(eth0, "LOCKED", 9), pub(eth0, "HOLDOVER", 5)},
			want: pubScore{Reference: 4, Published: 4, OutOfOrder: 1, Missing: 1},
		},
		"the same message twice": {
			got:  []refrecv.V2Publish{pub(eth0, "LOCKED", 1), pub(eth0, "LOCKED", 1), pub(eth1, "LOCKED", 2)},
			want: pubScore{Reference: 4, Published: 3, Extra: 1, Missing: 2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := scorePublishes(ref, tc.got); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestStateDiff(t *testing.T) {
	a, b, c := refrecv.V2Key{Type: "a"}, refrecv.V2Key{Type: "b"}, refrecv.V2Key{Type: "c"}
	want := map[refrecv.V2Key]string{a: "1", b: "2"}
	tests := map[string]struct {
		got  map[refrecv.V2Key]string
		want int
	}{
		"same":      {got: map[refrecv.V2Key]string{a: "1", b: "2"}, want: 0},
		"empty":     {got: map[refrecv.V2Key]string{}, want: 2},
		"different": {got: map[refrecv.V2Key]string{a: "1", b: "3"}, want: 1},
		"extra key": {got: map[refrecv.V2Key]string{a: "1", b: "2", c: "0"}, want: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := stateDiff(want, tc.got); got != tc.want {
				t.Fatalf("got %d, want %d", got, tc.want)
			}
		})
	}
}

// The embedded stream replays in order with increasing timestamps, and a
// fault-free receiver publishes every change of it.
func TestStreamAndReference(t *testing.T) {
	msgs, err := parseStream(ptpV2Messages)
	if err != nil {
		t.Fatal(err)
	}
	s, ref := newStream(msgs), newReference()
	now := time.Now()
	for range len(msgs) + 10 {
		ref.add(s.line(now)) // the same instant: timestamps still increase
	}
	if len(ref.cache.Current()) != 9 {
		t.Fatalf("keys: %v", ref.cache.Current())
	}
	if n := len(ref.pubs); n < 150 || n > 260 {
		t.Fatalf("%d transitions", n)
	}
	for i := 1; i < len(ref.pubs); i++ {
		if !ref.pubs[i].Timestamp.After(ref.pubs[i-1].Timestamp) {
			t.Fatalf("publish %d not after %d", i, i-1)
		}
	}
}
