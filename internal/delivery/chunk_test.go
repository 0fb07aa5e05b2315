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
