package refrecv_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

func TestManyConnectionsInOrder(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			r := start(t, network, nil)
			const conns, perConn = 8, 500
			var wg sync.WaitGroup
			for c := range conns {
				conn := dial(t, r)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perConn {
						_, _ = fmt.Fprintf(conn, "c%d-%d\n", c, i)
					}
				}()
			}
			wg.Wait()
			waitCount(t, r, conns*perConn)

			next := map[string]int{}
			var last time.Time
			for _, l := range r.Received() {
				var c, i int
				_, err := fmt.Sscanf(l.Data, "c%d-%d", &c, &i)
				require.NoError(t, err)
				key := fmt.Sprint(c)
				require.Equal(t, next[key], i, "lines of one connection arrive in order")
				next[key]++
				assert.False(t, l.At.Before(last), "receive times never go back")
				last = l.At
				assert.Positive(t, l.Conn)
			}
			assert.Len(t, r.Lines(), conns*perConn)
			assert.Equal(t, conns, r.Accepted())
			assert.Empty(t, r.ConnErrors())
		})
	}
}

func TestBytesPassThrough(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		stripCR bool
		want    string
	}{
		"exact":          {false, "a\rb\x00\xff\r"},
		"like ScanLines": {true, "a\rb\x00\xff"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := start(t, "unix", &refrecv.Options{StripCR: tc.stripCR})
			send(t, dial(t, r), "a\rb\x00\xff\r", "")
			waitCount(t, r, 2)
			assert.Equal(t, []string{tc.want, ""}, r.Lines())
		})
	}
}

func TestOutAndCountOnly(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := start(t, "unix", &refrecv.Options{Out: &out, CountOnly: true})
	send(t, dial(t, r), "one", "two")
	waitCount(t, r, 2)
	assert.Equal(t, "one\ntwo\n", out.String())
	assert.Empty(t, r.Lines())
	assert.Empty(t, r.Received())
	assert.Equal(t, 2, r.Count())
	require.NoError(t, r.OutErr())

	r.Reset()
	assert.Zero(t, r.Count())
}

func TestMaxLine(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", nil)
	c := dial(t, r)
	longest := strings.Repeat("x", refrecv.DefaultMaxLine-1) // + "\n" = 64 KiB
	send(t, c, longest)
	waitCount(t, r, 1)
	assert.Equal(t, longest, r.Lines()[0])

	_, _ = c.Write([]byte(longest + "y\n")) // may fail: the receiver gives up at 64 KiB
	_, _ = io.ReadAll(c)                    // the receiver closes the connection (EOF or ECONNRESET)
	require.Eventually(t, func() bool { return len(r.ConnErrors()) == 1 }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, r.ConnErrors()[0], bufio.ErrTooLong)
	assert.Equal(t, 1, r.Count())
}

func TestMaxLineOption(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", &refrecv.Options{MaxLine: 10})
	c := dial(t, r)
	send(t, c, "123456789") // 10 bytes with the newline
	waitCount(t, r, 1)
	_, _ = c.Write([]byte("1234567890\n"))
	require.Eventually(t, func() bool { return len(r.ConnErrors()) == 1 }, 10*time.Second, time.Millisecond)
	assert.ErrorIs(t, r.ConnErrors()[0], bufio.ErrTooLong)
}

func TestPartialLineWhenPeerCloses(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", nil)
	c := dial(t, r)
	_, err := io.WriteString(c, "whole\nhalf")
	require.NoError(t, err)
	require.NoError(t, c.Close())
	waitCount(t, r, 2)
	assert.Equal(t, []string{"whole", "half"}, r.Lines(), "like bufio.ScanLines at EOF")
}

func TestWaitCountTimeout(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err := r.WaitCount(ctx, 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "0 of 1 lines")
}

func TestRate(t *testing.T) {
	t.Parallel()
	r := start(t, "unix", &refrecv.Options{Rate: 200})
	lines := make([]string, 21)
	for i := range lines {
		lines[i] = fmt.Sprint(i)
	}
	send(t, dial(t, r), lines...)
	waitCount(t, r, len(lines))
	got := r.Received()
	span := got[len(got)-1].At.Sub(got[0].At)
	t.Logf("21 lines at 200/s took %v", span)
	assert.GreaterOrEqual(t, span, 90*time.Millisecond, "20 intervals of 5ms")
}

// With a handling time, a line read but not yet handled dies with the
// receiver: Kill loses it, Close does not.
func TestHandleTimeKillLosesReadAhead(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "r.sock")
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{HandleTime: 300 * time.Millisecond})
	require.NoError(t, err)
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("one\ntwo\nthree\n"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, rcv.WaitCount(ctx, 1))
	require.NoError(t, rcv.Kill())
	assert.Equal(t, []string{"one"}, rcv.Lines(), "two was being handled, three read ahead")
}
