package sockwait_test

import (
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/sockwait"
)

// watchEnded reports whether ch is closed within d.
func watchEnded(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	pairs := map[string]func(*testing.T) (net.Conn, net.Conn){"unix": unixPair, "tcp": tcpPair}
	ends := map[string]func(client, server net.Conn){
		"peer closes":       func(_, s net.Conn) { s.Close() },
		"peer half-closes":  func(_, s net.Conn) { _ = closeWrite(s) },
		"peer sends a byte": func(_, s net.Conn) { _, _ = s.Write([]byte{'x'}) },
		"we close":          func(c, _ net.Conn) { c.Close() },
		"a read deadline":   func(c, _ net.Conn) { _ = c.SetReadDeadline(time.Unix(1, 0)) },
	}
	for network, mk := range pairs {
		for name, end := range ends {
			t.Run(network+"/"+name, func(t *testing.T) {
				t.Parallel()
				client, server := mk(t)
				w := sockwait.New(client)
				ch := w.Watch()
				// The peer reading what was written does not make the
				// socket readable: the watch goes on.
				for range 3 {
					_, err := client.Write(payload(1000))
					require.NoError(t, err)
					_, err = io.ReadFull(server, make([]byte, 1000))
					require.NoError(t, err)
				}
				require.False(t, watchEnded(ch, 100*time.Millisecond), "ended while the peer only read")
				end(client, server)
				require.True(t, watchEnded(ch, 5*time.Second), "still watching after the socket became readable")
			})
		}
	}
}

func closeWrite(c net.Conn) error {
	return c.(interface{ CloseWrite() error }).CloseWrite()
}

func TestWatchUnsupported(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	require.True(t, watchEnded(sockwait.New(a).Watch(), time.Second), "nothing to watch: closed at once")
}

// A watch consumes nothing: a peer that closed with bytes unread is still
// reported reset (ECONNRESET) after the watch saw it, not as one that read
// everything and closed.
func TestWatchKeepsTheReset(t *testing.T) {
	t.Parallel()
	client, server := unixPair(t)
	w := sockwait.New(client)
	ch := w.Watch()
	_, err := client.Write(payload(1000))
	require.NoError(t, err)
	server.Close() // unread
	require.True(t, watchEnded(ch, 5*time.Second))
	_, gone, err := w.Probe()
	require.NoError(t, err)
	require.NotNil(t, gone, "hung up")
	require.ErrorIs(t, gone.Cause, syscall.ECONNRESET, "the reset is kept for the drainer")
}
