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
		"broken pipe":          {opErr("write", syscall.EPIPE), sockwait.ClassBrokenPipe},
		"refused":              {opErr("dial", syscall.ECONNREFUSED), sockwait.ClassConnectionRefused},
		"no socket file":       {opErr("dial", syscall.ENOENT), sockwait.ClassNoSuchSocket},
		"deadline":             {fmt.Errorf("write: %w", os.ErrDeadlineExceeded), sockwait.ClassTimeout},
		"context deadline":     {context.DeadlineExceeded, sockwait.ClassTimeout},
		"etimedout":            {opErr("read", syscall.ETIMEDOUT), sockwait.ClassTimeout},
		"access":               {opErr("dial", syscall.EACCES), sockwait.ClassPermission},
		"perm":                 {opErr("dial", syscall.EPERM), sockwait.ClassPermission},
		"reset":                {opErr("read", syscall.ECONNRESET), sockwait.ClassConnectionReset},
		"closed":               {fmt.Errorf("write: %w", net.ErrClosed), sockwait.ClassClosed},
		"eof":                  {io.EOF, sockwait.ClassClosed},
		"unexpected eof":       {io.ErrUnexpectedEOF, sockwait.ClassClosed},
		"peer gone clean":      {&sockwait.PeerGoneError{Cause: io.EOF}, sockwait.ClassClosed},
		"peer gone reset":      {&sockwait.PeerGoneError{Cause: syscall.ECONNRESET}, sockwait.ClassConnectionReset},
		"bare peer gone":       {sockwait.ErrPeerGone, sockwait.ClassClosed},
		"other":                {errors.New("boom"), sockwait.ClassOther},
		"unsupported is other": {sockwait.ErrUnsupported, sockwait.ClassOther},
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
