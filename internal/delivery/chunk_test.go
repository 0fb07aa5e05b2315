package delivery

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFits(t *testing.T) {
	for _, c := range []struct {
		inFlight, n int
		more, fits  bool
	}{
		{0, 10 * ChunkBytes, false, true}, // nothing in flight: a long event goes alone
		{1, ChunkBytes - 1, false, true},
		{1, ChunkBytes, false, false},
		{ChunkBytes, 1, false, false},
		{ChunkBytes, ChunkBytes, true, true}, // catching up: a second chunk follows the first
		{ChunkBytes, ChunkBytes + 1, true, false},
		{2 * ChunkBytes, 1, true, false},
	} {
		t.Run(fmt.Sprint(c.inFlight, "+", c.n, " more=", c.more), func(t *testing.T) {
			assert.Equal(t, c.fits, State{InFlight: c.inFlight}.Fits(c.n, c.more))
		})
	}
	assert.Zero(t, Spins(false))
	assert.Positive(t, Spins(true))
}

func TestInline(t *testing.T) {
	plan := Ready{Send: Send{From: 10, Max: 64}, SendOK: true}
	assert.True(t, plan.Inline(10, 1))
	assert.True(t, plan.Inline(10, InlineMax))
	assert.False(t, plan.Inline(10, InlineMax+1), "a batch: the writer's")
	assert.False(t, plan.Inline(11, 1), "events before them pending")
	for name, r := range map[string]Ready{
		"nothing to send": {Send: plan.Send},
		"isolating":       {Send: plan.Send, SendOK: true, State: State{Isolating: true}},
		"a resend":        {Send: Send{ResendWitness: 9}, SendOK: true},
		"one at a time":   {Send: Send{From: 10, Max: 1}, SendOK: true},
	} {
		assert.False(t, r.Inline(10, 2), name)
	}
}
