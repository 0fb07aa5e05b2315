package torture

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
	"github.com/evspool/evspool/internal/testkit/testmode"
)

// binary is the evspool these tests run (see TestMain).
var binary string

func TestMain(m *testing.M) {
	refrecv.MaybeRunCEP()
	refrecv.MaybeRunPreFork()
	if os.Getenv(receiverEnv) != "" {
		if err := runReceiver(os.Args[1], os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "receiver:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "evspool-torture")
	if err != nil {
		panic(err)
	}
	// make test hands every package one evspool built with -race
	// (testmode.BinaryEnv); run alone, these tests build one without.
	if binary, err = testmode.Evspool(dir, false); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// long reports whether the long (make torture) variants run.
func long() bool { return os.Getenv("EVSPOOL_TORTURE") == "long" }

// child is a process under test with its stdout lines collected.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}

	mu  sync.Mutex
	out []string
	log []byte
}

func startChild(t *testing.T, name string, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(name, args...), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), env...)
	var err error
	c.stdin, err = c.cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	c.cmd.Stderr = writerFunc(func(b []byte) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.log) < 1<<20 {
			c.log = append(c.log, b...)
		}
		return len(b), nil
	})
	require.NoError(t, c.cmd.Start())
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 128<<10), 128<<10)
		for sc.Scan() {
			c.mu.Lock()
			c.out = append(c.out, sc.Text())
			c.mu.Unlock()
		}
		io.Copy(io.Discard, stdout)
		c.cmd.Wait()
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

func (c *child) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.out...)
}

func (c *child) logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.log)
}

func (c *child) kill() {
	c.cmd.Process.Kill()
	<-c.done
}

// exitCode waits up to d for the child to exit.
func (c *child) exitCode(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-c.done:
		return c.cmd.ProcessState.ExitCode()
	case <-time.After(d):
		t.Fatalf("%s did not exit within %v; logs:\n%s", c.cmd.Path, d, c.logs())
		return -1
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// event is a line that carries its id twice, so a torn fragment of one is
// never mistaken for a whole event.
func event(id int) string {
	return fmt.Sprintf("id=%08d ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2 freq -1535 end=%08d", id, id)
}

// eventID parses an event line, or returns -1 for anything else.
func eventID(line string) int {
	var a, b int
	if len(line) < 20 || line[:3] != "id=" {
		return -1
	}
	a, err := strconv.Atoi(line[3:11])
	if err != nil {
		return -1
	}
	if _, err := fmt.Sscanf(line[len(line)-12:], "end=%08d", &b); err != nil || a != b || line != event(a) {
		return -1
	}
	return a
}
