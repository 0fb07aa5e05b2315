package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stateFlags are the v2 settings of `evspool run` (DESIGN.md's CLI
// contract): state keys from type, profile and iface, status_request
// answered with the state, cache_clear retiring every key before it.
var stateFlags = []string{"--state-key", "type,profile,iface", "--state-request", "status_request", "--state-clear", "cache_clear"}

// evspoolProc is `evspool run` as the state scenario drives it, in the
// place of a daemon embedding the library: send writes a line to its stdin
// and returns once evspool echoed it (every echoed line is spooled), as
// Emit returns once the event is committed. So a kill never falls between
// a line handed over and its commit.
type evspoolProc struct {
	bin  string
	args []string

	cmd     *exec.Cmd
	stdin   io.WriteCloser
	echoed  *atomic.Int64 // this process's echoed lines, counted by its reader
	echo    chan struct{} // a wake-up after each read of stdout
	exited  chan struct{}
	stderr  *lockedBuffer
	written int64 // lines written to this process
}

// echoTimeout bounds the wait for one line's echo.
const echoTimeout = 10 * time.Second

func startEvspoolProc(bin, sock, spool string, state bool) (*evspoolProc, error) {
	args := []string{"run", "--socket", sock, "--spool", spool, "--log-level", "warn"}
	if state {
		args = append(args, stateFlags...)
	}
	p := &evspoolProc{bin: bin, args: args}
	return p, p.restart()
}

// evspoolSupportsState reports whether bin's run knows the state flags.
func evspoolSupportsState(bin string) bool {
	out, _ := exec.Command(bin, "run", "--help").CombinedOutput()
	return bytes.Contains(out, []byte("state-key"))
}

func (p *evspoolProc) restart() error {
	cmd := exec.Command(p.bin, p.args...)
	p.stderr = &lockedBuffer{}
	cmd.Stderr = p.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.cmd, p.stdin, p.echoed, p.written = cmd, in, &atomic.Int64{}, 0
	p.echo, p.exited = make(chan struct{}, 1), make(chan struct{})
	go countLines(out, p.echoed, p.echo, cmd, p.exited)
	return nil
}

// countLines counts the newlines on r, waking echo after each read, then
// reaps cmd.
func countLines(r io.Reader, n *atomic.Int64, echo chan<- struct{}, cmd *exec.Cmd, exited chan<- struct{}) {
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		n.Add(int64(bytes.Count(buf[:k], []byte{'\n'})))
		select {
		case echo <- struct{}{}:
		default:
		}
		if err != nil {
			break
		}
	}
	_ = cmd.Wait()
	close(exited)
}

func (p *evspoolProc) send(line []byte) error {
	if _, err := p.stdin.Write(append(line[:len(line):len(line)], '\n')); err != nil {
		return fmt.Errorf("evspool stdin: %w: %s", err, p.stderr.tail())
	}
	p.written++
	timeout := time.NewTimer(echoTimeout)
	defer timeout.Stop()
	for p.echoed.Load() < p.written {
		select {
		case <-p.echo:
		case <-p.exited:
			return errors.New("evspool exited: " + p.stderr.tail())
		case <-timeout.C:
			return fmt.Errorf("evspool did not echo a line within %v: %s", echoTimeout, p.stderr.tail())
		}
	}
	return nil
}

func (p *evspoolProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// close stops it with SIGTERM (it exits within 2 s), SIGKILL after 5 s.
func (p *evspoolProc) close() {
	_ = p.stdin.Close()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
}

func (p *evspoolProc) dropped() uint64 { return 0 }

// lockedBuffer is a child's stderr, written by exec's copier and read by
// error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// tail is the end of what was written, for error messages.
func (l *lockedBuffer) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	if len(s) > 500 {
		s = s[len(s)-500:]
	}
	return strings.TrimSpace(s)
}
