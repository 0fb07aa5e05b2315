package emitter

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/evspool/evspool/internal/delivery"
	"github.com/evspool/evspool/internal/sockwait"
)

func TestDeliveryConfigOf(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		opts Options
		mode delivery.Mode
	}{
		"unix":                 {Options{Network: "unix"}, delivery.LastRead},
		"unix, a size":         {Options{Network: "unix", ReplayWindow: 4096}, delivery.FixedBytes},
		"tcp: linger only":     {Options{Network: "tcp"}, delivery.KernelTook},
		"tcp, a size is taken": {Options{Network: "tcp", ReplayWindow: 4096}, delivery.FixedBytes},
		"tcp, no window":       {Options{Network: "tcp", ReplayWindow: -1}, delivery.NoWindow},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.mode, deliveryConfigOf(&tc.opts).Mode)
		})
	}
}

// The shell reports what an error shows of the receiver's end; delivery
// judges it.
func TestCauseOf(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err    error
		cause  delivery.Cause
		unread int
	}{
		"gone, all read":      {&sockwait.PeerGoneError{}, delivery.CauseGone, 0},
		"gone, bytes left":    {&sockwait.PeerGoneError{Unread: 7}, delivery.CauseGone, 7},
		"gone by a reset":     {&sockwait.PeerGoneError{Cause: syscall.ECONNRESET}, delivery.CauseReset, 0},
		"reset":               {fmt.Errorf("write: %w", syscall.ECONNRESET), delivery.CauseReset, 0},
		"broken pipe":         {fmt.Errorf("write: %w", syscall.EPIPE), delivery.CauseBroken, 0},
		"gone, no count":      {sockwait.ErrPeerGone, delivery.CauseBroken, 0},
		"its FIN":             {errPeerClosed, delivery.CauseFin, 0},
		"abandoned":           {errAbandoned, delivery.CauseOwn, 0},
		"a reason of its own": {errors.New("no room"), delivery.CauseOwn, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cause, unread := causeOf(tc.err)
			assert.Equal(t, tc.cause, cause)
			assert.Equal(t, tc.unread, unread)
		})
	}
}
