package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync/atomic"
	"syscall"
	"time"
)

// emitterProc is one `evspool run` child: the demo writes events to its
// stdin and counts the lines it echoes (each one committed to the spool).
type emitterProc struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	written int64
	echoed  atomic.Int64
	done    chan struct{} // closed when the child has exited
}

// startEmitter runs `bin run args...`, its logs going to logs.
func startEmitter(bin string, args []string, logs io.Writer) (*emitterProc, error) {
	p := &emitterProc{cmd: exec.Command(bin, append([]string{"run"}, args...)...), done: make(chan struct{})}
	p.cmd.Stderr = logs
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo: start %s run: %w", bin, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.echoed.Add(1)
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *emitterProc) pid() int { return p.cmd.Process.Pid }

// write hands one event to the child.
func (p *emitterProc) write(line string) error {
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		return fmt.Errorf("demo: evspool (pid %d) stopped reading its input: %w", p.pid(), err)
	}
	p.written++
	return nil
}

// waitEchoed waits until the child has echoed, so committed, every event
// written to it.
func (p *emitterProc) waitEchoed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for p.echoed.Load() < p.written {
		select {
		case <-ctx.Done():
			return fmt.Errorf("demo: evspool (pid %d) echoed %d of %d events: %w", p.pid(), p.echoed.Load(), p.written, ctx.Err())
		case <-p.done:
			return fmt.Errorf("demo: evspool (pid %d) exited early", p.pid())
		case <-t.C:
		}
	}
	return nil
}

// kill SIGKILLs the child and waits until it is gone.
func (p *emitterProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// finish closes the child's input and waits, at most d, for it to deliver
// what is spooled and exit. It returns the exit code.
func (p *emitterProc) finish(d time.Duration) (int, error) {
	p.stdin.Close()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(d):
		p.kill()
		return -1, errors.New("demo: evspool did not finish delivering in time; killed")
	}
}
