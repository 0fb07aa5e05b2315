package refrecv_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloseLosesNothingWritten toggles reading while several writers stream,
// then closes: on a Unix socket every line whose write succeeded was queued
// at the receiver, and Close drains the queues, so nothing is lost.
func TestCloseLosesNothingWritten(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", nil)
	const writers = 4
	var written atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		c := dial(t, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				if _, err := fmt.Fprintf(c, "w%d-%d\n", w, i); err != nil {
					return // EPIPE once the receiver closed
				}
				written.Add(1)
			}
		}()
	}
	waitConns(t, r, writers)
	for range 50 {
		r.PauseReading()
		r.ResumeReading()
	}
	waitCount(t, r, 1000)
	r.PauseReading()
	require.NoError(t, r.Close())
	wg.Wait()
	assert.Equal(t, written.Load(), int64(r.Count()))
	t.Logf("%d lines written and received", r.Count())
}
