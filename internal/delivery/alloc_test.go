package delivery_test

import (
	"testing"

	"github.com/evspool/evspool/internal/delivery"
)

// A round on the hot path (what to write, wrote, the read, a look) allocates
// nothing once the connection's records have grown: the Ready's slices are
// reused.
func TestDeliveryStepsDoNotAllocate(t *testing.T) {
	d := delivery.New(testConfig(delivery.LastRead))
	d.Step(delivery.Input{Kind: delivery.Connected, Now: at(0), Reads: true})
	seq, ms := uint64(1), 0
	ls := make([]delivery.Line, 1)
	round := func() {
		ms++
		for _, in := range []delivery.Input{
			{Kind: delivery.Next, Now: at(ms), Seq: seq},
			{Kind: delivery.Wrote, Now: at(ms), Lines: ls, N: 0},
			{Kind: delivery.Read, Now: at(ms), N: 0},
			{Kind: delivery.Park, Now: at(ms)},
		} {
			ls[0] = delivery.Line{Seq: seq, Size: 100}
			if err := d.Step(in); err != nil {
				t.Fatal(err)
			}
			rd := d.Ready()
			if rd.AckThrough != 0 {
				seq = rd.AckThrough + 1
			}
			d.Advance()
		}
		seq = max(seq, uint64(ms)+1)
	}
	for range 1000 {
		round()
	}
	if n := testing.AllocsPerRun(1000, round); n > 0.1 {
		t.Errorf("%.2f allocations a round", n)
	}
}
