package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// startCLIEvspool starts `evspool run --fsync=false` on a spool of its own,
// its echo to /dev/null, as a unit file or a shell pipe runs it, with env
// added to the environment; or, for the exec sides, `evspool exec
// --fsync=false -- cat`, cat reading the generator's pipe.
func startCLIEvspool(bin, dir, side string, env ...string) (*cliEmitter, error) {
	dir = filepath.Join(dir, slug(side))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "evspool.sock")
	rcv, err := startCountingReceiver(sock)
	if err != nil {
		return nil, err
	}
	spool := filepath.Join(dir, "spool")
	if err := os.Mkdir(spool, 0o700); err != nil {
		rcv.close()
		return nil, err
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		rcv.close()
		return nil, err
	}
	defer devNull.Close()
	stderr := &lockedBuffer{}
	args := []string{"run", "--socket", sock, "--spool", spool, "--fsync=false", "--log-level", "warn"}
	if side == cliExec || side == cliExecP2 {
		args = append([]string{"exec"}, append(args[1:], "--", "cat")...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = devNull, stderr, append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		rcv.close()
		return nil, err
	}
	return &cliEmitter{side: side, pid: cmd.Process.Pid, rcv: rcv,
		write: func(line []byte) error { _, err := in.Write(line); return err },
		close: func() error { return closeAndWait(in, cmd, stderr) }}, nil
}

// closeAndWait ends cmd's stdin and waits for it to exit 0 (evspool run:
// everything delivered), killing it after cliDrainBound.
func closeAndWait(in io.Closer, cmd *exec.Cmd, stderr *lockedBuffer) error {
	_ = in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("evspool %s: %w: %s", cmd.Args[1], err, stderr.tail())
		}
		return nil
	case <-time.After(cliDrainBound):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("evspool %s did not exit %v after its input ended (killed): %s", cmd.Args[1], cliDrainBound, stderr.tail())
	}
}

// startCLISyslog starts syslog-ng as the syslog-ng-reliable contender
// does (its config, `syslog-ng -F`), fed by the generator.
func startCLISyslog(dir string) (*cliEmitter, error) {
	sdir := filepath.Join(dir, "syslog-ng")
	if err := os.Mkdir(sdir, 0o700); err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "syslog-ng.sock")
	rcv, err := startCountingReceiver(sock)
	if err != nil {
		return nil, err
	}
	s, err := openSyslogNG(sock, sdir)
	if err != nil {
		rcv.close()
		return nil, err
	}
	one := make([][]byte, 1)
	return &cliEmitter{side: cliSyslog, pid: s.Pid(), rcv: rcv,
		write: func(line []byte) error {
			one[0] = line[:len(line)-1] // Emit adds the newline
			return s.Emit(context.Background(), one)
		},
		close: s.Close}, nil
}

// startCLIEvspoolNonblock starts `evspool run --fsync=false` as
// startCLIEvspool does, but with its stdin's pipe O_NONBLOCK when it
// starts, so that its Go runtime reads stdin through the network poller
// rather than in a blocking read(2): the control side of cli-cost. A
// shell's pipe is blocking and evspool run makes it O_NONBLOCK itself, so
// the plain side should cost what this one does. It is started with
// syscall.ForkExec, as os/exec would make the pipe blocking.
func startCLIEvspoolNonblock(bin, dir string) (*cliEmitter, error) {
	sock := filepath.Join(dir, "evspool-nb.sock")
	rcv, err := startCountingReceiver(sock)
	if err != nil {
		return nil, err
	}
	spool := filepath.Join(dir, "spool-nb")
	if err := os.Mkdir(spool, 0o700); err != nil {
		rcv.close()
		return nil, err
	}
	stderr, err := os.Create(filepath.Join(dir, "evspool-nb.stderr"))
	if err != nil {
		rcv.close()
		return nil, err
	}
	defer stderr.Close()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		rcv.close()
		return nil, err
	}
	devNull, err := syscall.Open(os.DevNull, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err == nil {
		err = syscall.SetNonblock(p[0], true)
	}
	var pid int
	if err == nil {
		argv := []string{bin, "run", "--socket", sock, "--spool", spool, "--fsync=false", "--log-level", "warn"}
		pid, err = syscall.ForkExec(bin, argv, &syscall.ProcAttr{Env: os.Environ(),
			Files: []uintptr{uintptr(p[0]), uintptr(devNull), stderr.Fd()},
			Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
	}
	_ = syscall.Close(p[0])
	_ = syscall.Close(devNull)
	if err != nil {
		_ = syscall.Close(p[1])
		rcv.close()
		return nil, err
	}
	in := os.NewFile(uintptr(p[1]), "evspool-nb-stdin")
	proc, err := os.FindProcess(pid)
	if err != nil {
		_ = in.Close()
		rcv.close()
		return nil, err
	}
	return &cliEmitter{side: cliEvspoolNB, pid: pid, rcv: rcv,
		write: func(line []byte) error { _, err := in.Write(line); return err },
		close: func() error { return closeAndWaitProc(in, proc, stderr.Name()) }}, nil
}

// closeAndWaitProc is closeAndWait for a process started without os/exec.
func closeAndWaitProc(in io.Closer, proc *os.Process, stderrPath string) error {
	_ = in.Close()
	done := make(chan error, 1)
	go func() {
		st, err := proc.Wait()
		if err == nil && !st.Success() {
			err = errors.New(st.String())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("evspool run: %w: %s", err, tailFile(stderrPath))
		}
		return nil
	case <-time.After(cliDrainBound):
		_ = proc.Kill()
		<-done
		return fmt.Errorf("evspool run did not exit %v after its input ended (killed): %s", cliDrainBound, tailFile(stderrPath))
	}
}
