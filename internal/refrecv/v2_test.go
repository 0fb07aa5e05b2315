package refrecv_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

const statusRequest = `{"version":1,"type":"status_request"}`

func startV2(t *testing.T, opts *refrecv.V2Options) *refrecv.V2 {
	t.Helper()
	v, err := refrecv.StartV2(sockPath(t), opts)
	require.NoError(t, err)
	t.Cleanup(v.Kill)
	return v
}

// dialV2 connects and returns the connection and a reader on it.
func dialV2(t *testing.T, v *refrecv.V2) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", v.Path())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

// readLine reads one line within 10 s.
func readLine(t *testing.T, c net.Conn, r *bufio.Reader) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	l, err := r.ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSuffix(l, "\n")
}

func waitLines(t *testing.T, v *refrecv.V2, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return v.Lines() >= n }, 10*time.Second, time.Millisecond)
	require.Equal(t, n, v.Lines())
}

func TestV2AsksForStatusOnEveryConnection(t *testing.T) {
	t.Parallel()
	v := startV2(t, nil)
	for range 2 {
		c, r := dialV2(t, v)
		assert.Equal(t, statusRequest, readLine(t, c, r))
		require.NoError(t, c.Close())
	}
	assert.Equal(t, 2, v.Written())
}

func TestV2PublishesChangesWithTheirTimestamp(t *testing.T) {
	t.Parallel()
	v := startV2(t, nil)
	c, _ := dialV2(t, v)
	lines := []string{
		v2Line("ptp_state", "eth0", `{"state":"FREERUN"}`, 1),
		v2Line("ptp_state", "eth0", `{"state":"FREERUN"}`, 2),
		"garbage",
		v2Line("ptp_state", "eth0", `{"state":"LOCKED"}`, 3),
		v2Line("clock_class", "eth0", `{"clock_class":6}`, 4),
	}
	send(t, c, lines...)
	waitLines(t, v, len(lines))

	pub := v.Published()
	require.Len(t, pub, 3)
	assert.Equal(t, []string{"FREERUN", "LOCKED", "6"}, []string{pub[0].Values, pub[1].Values, pub[2].Values})
	assert.Equal(t, time.Date(2026, 5, 12, 21, 0, 3, 0, time.UTC), pub[1].Timestamp)
	assert.False(t, pub[2].At.Before(pub[1].At))
	assert.Equal(t, 1, v.Unparsable())
	assert.Equal(t, map[refrecv.V2Key]string{{Type: "ptp_state", Iface: "eth0"}: "LOCKED", {Type: "clock_class", Iface: "eth0"}: "6"}, v.Current())

	send(t, c, `{"version":1,"type":"cache_clear"}`)
	waitLines(t, v, len(lines)+1)
	assert.Empty(t, v.Current())
}

// The next connection is accepted, asked and read only once the previous
// one has ended.
func TestV2ServesOneConnectionAtATime(t *testing.T) {
	t.Parallel()
	v := startV2(t, nil)
	a, ra := dialV2(t, v)
	require.Equal(t, statusRequest, readLine(t, a, ra))
	b, rb := dialV2(t, v)
	send(t, b, v2Line("ptp_state", "eth1", `{"state":"LOCKED"}`, 1))
	send(t, a, v2Line("ptp_state", "eth0", `{"state":"LOCKED"}`, 2))
	waitLines(t, v, 1)

	require.NoError(t, b.SetReadDeadline(time.Now().Add(200*time.Millisecond)))
	_, err := rb.ReadString('\n')
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "b is not asked while a is served")
	assert.Equal(t, 1, v.Accepted())

	require.NoError(t, a.Close())
	assert.Equal(t, statusRequest, readLine(t, b, rb))
	waitLines(t, v, 2)
	assert.Len(t, v.Current(), 2)
}

// Kill forgets the cache, as a restarted proxy starts empty, and keeps what
// was published; Restart listens on the same path despite the stale file.
func TestV2KillForgetsTheCache(t *testing.T) {
	t.Parallel()
	v := startV2(t, nil)
	c, _ := dialV2(t, v)
	send(t, c, v2Line("ptp_state", "eth0", `{"state":"LOCKED"}`, 1))
	waitLines(t, v, 1)
	require.Len(t, v.Current(), 1)

	v.Kill()
	v.Kill()
	assert.Empty(t, v.Current())
	_, err := os.Stat(v.Path())
	require.NoError(t, err, "a killed receiver leaves its socket file")
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = io.ReadAll(c)
	require.NoError(t, err, "the connection ended")

	require.NoError(t, v.Restart())
	require.ErrorIs(t, v.Restart(), refrecv.ErrRunning)
	c2, _ := dialV2(t, v)
	send(t, c2, v2Line("ptp_state", "eth0", `{"state":"LOCKED"}`, 2))
	waitLines(t, v, 2)
	assert.Len(t, v.Published(), 2, "an empty cache publishes the same value again")
	assert.Len(t, v.Current(), 1)
}

// A line read but not handled when the receiver is killed is lost.
func TestV2KillLosesTheLineBeingHandled(t *testing.T) {
	t.Parallel()
	v := startV2(t, &refrecv.V2Options{HandleTime: time.Hour})
	c, r := dialV2(t, v)
	require.Equal(t, statusRequest, readLine(t, c, r))
	send(t, c, v2Line("ptp_state", "eth0", `{"state":"LOCKED"}`, 1))
	v.Kill() // returns though handling takes an hour
	assert.Zero(t, v.Lines())
	assert.Empty(t, v.Published())
}

func TestV2WritesBack(t *testing.T) {
	t.Parallel()
	v := startV2(t, &refrecv.V2Options{WriteBackEvery: 10})
	c, r := dialV2(t, v)
	require.Equal(t, statusRequest, readLine(t, c, r))
	var lines []string
	for i := range 25 {
		lines = append(lines, v2Line("clock_class", "eth0", `{"clock_class":6}`, i))
	}
	send(t, c, lines...)
	for range 2 {
		assert.Equal(t, `{"version":1,"type":"ack"}`, readLine(t, c, r))
	}
	waitLines(t, v, 25)
	assert.Equal(t, 3, v.Written())
}

// A sender that never reads fills the buffers with what the receiver writes
// back; the receiver's write then blocks and it stops reading, until the
// sender reads.
func TestV2WriteBackBlocksOnASenderThatDoesNotRead(t *testing.T) {
	t.Parallel()
	v := startV2(t, &refrecv.V2Options{WriteBackEvery: 1, WriteBack: strings.Repeat("w", 200)})
	c, _ := dialV2(t, v)
	line := v2Line("clock_class", "eth0", `{"clock_class":6}`, 1) + "\n"
	const n = 20_000
	buf := []byte(strings.Repeat(line, n))

	require.NoError(t, c.SetWriteDeadline(time.Now().Add(time.Second)))
	wrote, err := c.Write(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the receiver stopped reading")
	assert.Less(t, v.Lines(), n)

	drained := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, c)
		drained <- err
	}()
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	_, err = c.Write(buf[wrote:])
	require.NoError(t, err)
	waitLines(t, v, n)
	require.NoError(t, c.Close())
	if err := <-drained; err != nil {
		assert.True(t, errors.Is(err, net.ErrClosed), "%v", err)
	}
}
