package emitter_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// Lines split across writes, several in one write, and a trailing partial
// line emitted by Close.
func TestWriterSplitsLines(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	r := newRig(t, &refrecv.Options{}, &emitter.Options{Stdout: &out})
	w := r.em.Writer()
	for _, p := range []string{"ptp4l[1.0]: one", " two\nphc2sys[2", ".0]: three\n\nfour\nfi", "ve\n"} {
		n, err := io.WriteString(w, p)
		require.NoError(t, err)
		require.Equal(t, len(p), n)
	}
	_, err := fmt.Fprintf(w, "%s[%d]: %s\n%s", "ts2phc", 3, "six", "seven")
	require.NoError(t, err)
	require.EqualValues(t, 6, r.em.Stats().Emitted, "the partial line waits for its newline")
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "a second Close is a no-op")
	_, err = w.Write([]byte("late\n"))
	require.ErrorIs(t, err, emitter.ErrWriterClosed)

	want := []string{"ptp4l[1.0]: one two", "phc2sys[2.0]: three", "", "four", "five", "ts2phc[3]: six", "seven"}
	r.flush(5 * time.Second)
	require.Equal(t, want, waitLines(t, r.rcv, len(want)))
	require.Equal(t, strings.Join(want, "\n")+"\n", out.String())
}

// A line over the limit is refused whole, with an error naming the limit,
// whether it came in one write or many; the lines around it go through.
func TestWriterRefusesLongLine(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{MaxEventSize: 16})
	w := r.em.Writer()

	_, err := io.WriteString(w, "ok\n"+strings.Repeat("x", 40)+"\nafter\n")
	var se *emitter.EventSizeError
	require.ErrorAs(t, err, &se)
	require.Equal(t, 41, se.Size)
	require.Equal(t, 16, se.Limit)
	require.ErrorContains(t, err, "limit of 16 bytes")
	require.ErrorContains(t, err, "not cut")

	for _, p := range []string{"yyyyyyyyyy", "yyyyyyyyyy", "yyyyyyyyyy"} {
		_, err := io.WriteString(w, p)
		require.NoError(t, err, "not known to be refused until its newline")
	}
	_, err = io.WriteString(w, "yy\nnext\n")
	require.ErrorAs(t, err, &se)
	require.Equal(t, 33, se.Size)

	_, err = io.WriteString(w, "exactly-15-byte\n")
	require.NoError(t, err, "15 bytes and the newline fit")
	r.flush(5 * time.Second)
	require.Equal(t, []string{"ok", "after", "next", "exactly-15-byte"}, waitLines(t, r.rcv, 4))
	require.EqualValues(t, 2, r.em.Stats().WriterRefused)
	require.EqualValues(t, 2, r.em.Stats().Refused, "a loss like any other")
	require.EqualValues(t, 2, r.em.Stats().Lost())
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, "events refused, not spooled"), "rate-limited")

	_, err = io.WriteString(w, strings.Repeat("z", 20))
	require.NoError(t, err)
	require.ErrorIs(t, w.Close(), emitter.ErrEventTooLarge, "a refused trailing line is reported by Close")
}

// With OnError set, a refused line does not fail the Write: an io.Copy (the
// one os/exec runs for cmd.Stdout) keeps going.
func TestWriterOnError(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{MaxEventSize: 16})
	w := r.em.Writer()
	var errs []error
	w.OnError = func(err error) { errs = append(errs, err) }
	n, err := io.Copy(w, strings.NewReader("a\n"+strings.Repeat("x", 100)+"\nb\n"))
	require.NoError(t, err)
	require.EqualValues(t, 105, n)
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], emitter.ErrEventTooLarge)
	r.flush(5 * time.Second)
	require.Equal(t, []string{"a", "b"}, waitLines(t, r.rcv, 2))

	require.NoError(t, r.em.Close(context.Background()))
	_, err = w.Write([]byte("c\n"))
	require.ErrorIs(t, err, emitter.ErrClosed, "a closed emitter is reported even with OnError")
}

// Several child processes, each with its own Writer on one Emitter: every
// line arrives whole, each process's lines in its order.
func TestWritersOfChildProcesses(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, nil)
	const procs, lines = 4, 300
	var wg sync.WaitGroup
	for p := range procs {
		w := r.em.Writer()
		cmd := exec.Command("sh", "-c", fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "proc%d line $i"; i=$((i+1)); done; printf "proc%d tail"`, lines, p, p))
		cmd.Stdout = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			require.NoError(t, cmd.Run())
			require.NoError(t, w.Close())
		}()
	}
	wg.Wait()
	r.flush(10 * time.Second)
	got := waitLines(t, r.rcv, procs*(lines+1))
	perProc := map[string][]string{}
	for _, l := range got {
		name, _, _ := strings.Cut(l, " ")
		perProc[name] = append(perProc[name], l)
	}
	require.Len(t, perProc, procs)
	for p := range procs {
		want := make([]string, 0, lines+1)
		for i := range lines {
			want = append(want, fmt.Sprintf("proc%d line %d", p, i))
		}
		want = append(want, fmt.Sprintf("proc%d tail", p))
		require.Equal(t, want, perProc[fmt.Sprintf("proc%d", p)])
	}
}

// Real-shaped PTP output, written in chunks of every size from 1 byte up,
// arrives line for line, byte for byte.
func TestWriterChunkSizes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../wal/testdata/ptp-events.txt")
	require.NoError(t, err)
	want := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	r := newRig(t, &refrecv.Options{}, nil)
	var sent []string
	for size := 1; size <= 64; size *= 2 {
		w := r.em.Writer()
		for rest := raw; len(rest) > 0; {
			n := min(size, len(rest))
			_, err := w.Write(rest[:n])
			require.NoError(t, err)
			rest = rest[n:]
		}
		require.NoError(t, w.Close())
		sent = append(sent, want...)
	}
	r.flush(10 * time.Second)
	require.Equal(t, sent, waitLines(t, r.rcv, len(sent)))
}
