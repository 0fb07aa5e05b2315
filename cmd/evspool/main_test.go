package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/testkit/testmode"
)

// binary is the evspool built once for the tests that drive the real thing;
// mkspool fills a big spool fast (testdata/mkspool).
var binary, mkspool string

func TestMain(m *testing.M) {
	if lim := os.Getenv(fsizeEnv); lim != "" {
		execWithFileLimit(lim) // the re-exec helper of withFileLimit
	}
	dir, err := os.MkdirTemp("", "evspool-bin")
	if err != nil {
		panic(err)
	}
	// With -race, so that a race in the CLI's own goroutines fails the
	// tests that run it; make test hands one such build to every package
	// (testmode.BinaryEnv).
	if binary, err = testmode.Evspool(dir, true); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mkspool = filepath.Join(dir, "mkspool")
	out, err := exec.Command("go", "build", "-o", mkspool, "./testdata/mkspool").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build mkspool: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running evspool with its output collected.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	stdout []string // echoed lines, as they come
	stderr bytes.Buffer
	done   chan struct{}
	err    error
}

// wholeLines splits stdout into the lines evspool echoed whole: a last line
// with no newline was cut off when the process was killed in the middle of
// a write (to a pipe, a write over 4 KiB is not atomic), and was not echoed.
// bufio.ScanLines returned it as a line: TestRunKilledAndRestarted then
// counted "kill 29" as echoed and never delivered (once in about 10 runs of
// make test), while the event it began, committed before its echo, arrived
// whole and was filtered out as a line never echoed.
func wholeLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), nil, nil // cut off: skipped
	}
	return 0, nil, nil
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startEnv(t, nil, args...)
}

// startEnv starts evspool with extra environment variables.
func startEnv(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	return startWith(t, func(cmd *exec.Cmd) {
		if env != nil {
			cmd.Env = append(os.Environ(), env...)
		}
	}, args...)
}

// startWith starts evspool once setup has set up its command. A stdin or
// stdout setup leaves unset is a pipe: the test writes to p.stdin, and
// p.echoed returns what came out.
func startWith(t *testing.T, setup func(*exec.Cmd), args ...string) *proc {
	t.Helper()
	if len(args) > 0 && (args[0] == "run" || args[0] == "exec") {
		// refrecv records a line as it reads it: the replay window's linger
		// would only slow every exit down (the torture tests keep it).
		args = append([]string{args[0], "--replay-linger", "20ms"}, args[1:]...)
	}
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	setup(p.cmd)
	var err error
	if p.cmd.Stdin == nil {
		p.stdin, err = p.cmd.StdinPipe()
		require.NoError(t, err)
	}
	var out io.Reader = strings.NewReader("")
	if p.cmd.Stdout == nil {
		out, err = p.cmd.StdoutPipe()
		require.NoError(t, err)
	}
	p.cmd.Stderr = &syncWriter{mu: &p.mu, w: &p.stderr}
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 128<<10), 128<<10)
		sc.Split(wholeLines)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout = append(p.stdout, sc.Text())
			p.mu.Unlock()
		}
		p.err = p.cmd.Wait()
	}()
	t.Cleanup(func() {
		// An exec'd COMMAND outlives a killed evspool in its own group and
		// holds its stderr: its input ends first, or a failed test hangs.
		if p.stdin != nil {
			p.stdin.Close()
		}
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *proc) echoed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.stdout...)
}

func (p *proc) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// wait returns the exit code, failing the test if it takes longer than d.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		t.Fatalf("evspool did not exit within %v; logs:\n%s", d, p.logs())
	}
	return p.cmd.ProcessState.ExitCode()
}

type syncWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

func paths(t *testing.T) (sock, spool string) {
	dir := t.TempDir()
	return filepath.Join(dir, "events.sock"), filepath.Join(dir, "spool")
}

func startSink(t *testing.T, sock string) *refrecv.Receiver {
	t.Helper()
	rcv, err := refrecv.Start("unix", sock, nil)
	require.NoError(t, err)
	t.Cleanup(func() { rcv.Close() })
	return rcv
}

func waitLines(t *testing.T, rcv *refrecv.Receiver, n int, d time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	require.NoError(t, rcv.WaitCount(ctx, n), "received %d of %d", rcv.Count(), n)
	return rcv.Lines()
}

func lines(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s %06d ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2 freq -1535", prefix, i))
	}
	return out
}

func joinLines(ls []string) string { return strings.Join(ls, "\n") + "\n" }

// A line cut off by a kill is not counted as echoed.
func TestWholeLinesSkipsACutLine(t *testing.T) {
	t.Parallel()
	sc := bufio.NewScanner(strings.NewReader("kill 1\nkill 2\nkill 29"))
	sc.Split(wholeLines)
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	require.NoError(t, sc.Err())
	require.Equal(t, []string{"kill 1", "kill 2"}, got)
}
