package sockwait_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/evspool/evspool/internal/sockwait"
)

func opErr(op string, errno error) error {
	return &net.OpError{Op: op, Net: "unix", Err: os.NewSyscallError(op, errno)}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		err  error
		want string
	}{
		"nil":                  {nil, ""},
		"broken pipe":          {opErr("write", syscall.EPIPE), "broken_pipe"},
		"refused":              {opErr("dial", syscall.ECONNREFUSED), "connection_refused"},
		"no socket file":       {opErr("dial", syscall.ENOENT), "no_such_socket"},
		"deadline":             {fmt.Errorf("write: %w", os.ErrDeadlineExceeded), "timeout"},
		"context deadline":     {context.DeadlineExceeded, "timeout"},
		"etimedout":            {opErr("read", syscall.ETIMEDOUT), "timeout"},
		"access":               {opErr("dial", syscall.EACCES), "permission"},
		"perm":                 {opErr("dial", syscall.EPERM), "permission"},
		"reset":                {opErr("read", syscall.ECONNRESET), "connection_reset"},
		"closed":               {fmt.Errorf("write: %w", net.ErrClosed), "closed"},
		"eof":                  {io.EOF, "closed"},
		"unexpected eof":       {io.ErrUnexpectedEOF, "closed"},
		"peer gone clean":      {&sockwait.PeerGoneError{Cause: io.EOF}, "closed"},
		"peer gone reset":      {&sockwait.PeerGoneError{Cause: syscall.ECONNRESET}, "connection_reset"},
		"bare peer gone":       {sockwait.ErrPeerGone, "closed"},
		"other":                {errors.New("boom"), "other"},
		"unsupported is other": {sockwait.ErrUnsupported, "other"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, sockwait.Classify(tc.err))
		})
	}
}

func TestPeerGoneErrorMatches(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("drain: %w", &sockwait.PeerGoneError{Unread: 3, Cause: syscall.ECONNRESET})
	assert.ErrorIs(t, err, sockwait.ErrPeerGone)
	assert.ErrorIs(t, err, syscall.ECONNRESET)
	assert.Contains(t, err.Error(), "3 bytes")
	assert.Contains(t, err.Error(), "resend")
}
