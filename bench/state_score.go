package main

import (
	"sort"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

// pubScore compares the transitions a v2 receiver published with those a
// fault-free run publishes (the reference: every line once, in order).
type pubScore struct {
	Reference int `json:"reference"` // transitions the reference publishes
	Published int `json:"published"`
	// Missing counts reference transitions never published, not even late
	// (a later re-send of the same value, before the next transition, is
	// that transition announced late).
	Missing int `json:"missing"`
	// OutOfOrder counts publishes of a message older than one already
	// published for its key: a value that was over, announced again.
	OutOfOrder int `json:"out_of_order"`
	// Extra counts in-order publishes of a transition already published: a
	// restarted receiver announcing again a value it had announced.
	Extra int `json:"extra"`
}

// scorePublishes matches each publish to the reference transition in
// force at its message's timestamp. Timestamps are unique and increasing
// in the stream, so that transition is the one whose value it carries.
func scorePublishes(ref, got []refrecv.V2Publish) pubScore {
	s := pubScore{Reference: len(ref), Published: len(got)}
	starts := map[refrecv.V2Key][]time.Time{}
	for _, p := range ref {
		starts[p.Key] = append(starts[p.Key], p.Timestamp)
	}
	matched := map[refrecv.V2Key][]bool{}
	for k, ts := range starts {
		matched[k] = make([]bool, len(ts))
	}
	newest := map[refrecv.V2Key]time.Time{}
	for _, p := range got {
		if last, ok := newest[p.Key]; ok && p.Timestamp.Before(last) {
			s.OutOfOrder++
			continue
		}
		newest[p.Key] = p.Timestamp
		ts := starts[p.Key]
		i := sort.Search(len(ts), func(i int) bool { return ts[i].After(p.Timestamp) }) - 1
		if i < 0 || matched[p.Key][i] {
			s.Extra++
			continue
		}
		matched[p.Key][i] = true
	}
	for _, m := range matched {
		for _, ok := range m {
			if !ok {
				s.Missing++
			}
		}
	}
	return s
}

// stateDiff counts the keys a receiver's current state has wrong: missing,
// with another value, or there when they should not be.
func stateDiff(want, got map[refrecv.V2Key]string) int { return len(stateWrong(want, got)) }

// stateWrong describes each key stateDiff counts, sorted: "key: got X,
// want Y", "-" for absent.
func stateWrong(want, got map[refrecv.V2Key]string) []string {
	var out []string
	show := func(m map[refrecv.V2Key]string, k refrecv.V2Key) string {
		if v, ok := m[k]; ok {
			return v
		}
		return "-"
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			out = append(out, k.String()+": got "+show(got, k)+", want "+v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out = append(out, k.String()+": got "+v+", want -")
		}
	}
	sort.Strings(out)
	return out
}
