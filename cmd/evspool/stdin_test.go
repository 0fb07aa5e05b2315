//go:build linux

package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// run reads a pipe through Go's poller: stdin is O_NONBLOCK and no thread
// waits in read(2) on it (a blocking read holds a thread, and each line
// wakes one, and the runtime's sysmon, again).
func TestRunReadsPipeThroughPoller(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool)
	_, err := io.WriteString(p.stdin, "one\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(p.echoed()) == 1 }, 5*time.Second, 5*time.Millisecond)
	pid := p.cmd.Process.Pid
	require.True(t, fdinfoNonblock(t, pid, 0), "evspool run's stdin, a pipe, is not O_NONBLOCK")
	require.Eventually(t, func() bool { return !readingStdin(t, pid) }, time.Second, 10*time.Millisecond,
		"a thread of evspool run waits in read(2) on stdin")
	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitOK, p.wait(t, 5*time.Second), p.logs())
}

// The O_NONBLOCK run sets on its stdin belongs to the pipe's (or socket's)
// open file description, which other processes may hold: run puts it back
// as it found it however it ends, but for SIGKILL. The test keeps the
// description open and looks at its flags after run exits.
func TestRunPutsStdinFlagBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		input func(t *testing.T) (child *os.File, held int, w io.WriteCloser)
		end   func(t *testing.T, p *proc, w io.WriteCloser)
		was   bool // O_NONBLOCK when run starts
		after bool // O_NONBLOCK once it has exited
	}{
		{"end of input", pipeInput, closeInput, false, false},
		{"socket, end of input", socketInput, closeInput, false, false},
		{"SIGINT while reading stdin", pipeInput, sendSignals(syscall.SIGINT), false, false},
		{"SIGTERM", pipeInput, sendSignals(syscall.SIGTERM), false, false},
		{"second signal", pipeInput, sendSignals(syscall.SIGINT, syscall.SIGINT), false, false},
		{"already O_NONBLOCK", pipeInput, closeInput, true, true},
		// Nothing runs at SIGKILL: the flag stays (docs/operations.md).
		{"SIGKILL", pipeInput, sendSignals(syscall.SIGKILL), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sock, spool := paths(t)
			startSink(t, sock)
			child, held, w := tc.input(t)
			if tc.was {
				require.NoError(t, unix.SetNonblock(held, true))
			}
			p := startWith(t, func(cmd *exec.Cmd) { cmd.Stdin = child }, "run", "--socket", sock, "--spool", spool)
			require.NoError(t, child.Close()) // evspool has its own
			_, err := io.WriteString(w, "one\n")
			require.NoError(t, err)
			require.Eventually(t, func() bool { return len(p.echoed()) == 1 }, 5*time.Second, 5*time.Millisecond)
			require.True(t, nonblock(t, held), "while run reads it")
			tc.end(t, p, w)
			p.wait(t, 5*time.Second)
			require.Equal(t, tc.after, nonblock(t, held), "after run exited: %s", p.logs())
		})
	}
	t.Run("start-up error", func(t *testing.T) {
		t.Parallel()
		sock, spool := paths(t)
		require.NoError(t, os.Mkdir(spool, 0o700))
		require.NoError(t, os.Chmod(spool, 0o777)) // writable by others: fatal
		child, held, _ := pipeInput(t)
		cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool)
		cmd.Stdin = child
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		require.Equal(t, exitFatal, ee.ExitCode(), "%s", out)
		require.False(t, nonblock(t, held))
	})
}

// Where the flag would reach what it must not, run reads stdin blocking, as
// before: a terminal (the shell's), a regular file, a socket that is stdout
// too (a connection inetd passes as both), and exec's stdin, which is
// COMMAND's.
func TestStdinLeftAlone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		input  func(t *testing.T) (child *os.File, held int, w io.WriteCloser)
		stdout bool     // stdin is stdout too
		args   []string // exec's
	}{
		{"regular file", fileInput, false, nil},
		{"terminal", ttyInput, false, nil},
		{"socket that is stdout too", socketInput, true, nil},
		{"exec", pipeInput, false, []string{"--", "cat"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sock, spool := paths(t)
			cmdName := "run"
			if tc.args != nil {
				cmdName = "exec"
			}
			child, held, w := tc.input(t)
			before, err := unix.FcntlInt(uintptr(held), unix.F_GETFL, 0)
			require.NoError(t, err)
			var echo io.Reader
			p := startWith(t, func(cmd *exec.Cmd) {
				cmd.Stdin = child
				if tc.stdout {
					cmd.Stdout, echo = child, w.(io.Reader)
				}
			}, append([]string{cmdName, "--socket", sock, "--spool", spool}, tc.args...)...)
			require.NoError(t, child.Close())
			if w != nil {
				_, err := io.WriteString(w, "one\n")
				require.NoError(t, err)
			}
			if echo != nil {
				got := make([]byte, 4)
				_, err := io.ReadFull(echo, got)
				require.NoError(t, err, p.logs())
				require.Equal(t, "one\n", string(got))
			} else {
				require.Eventually(t, func() bool { return len(p.echoed()) == 1 }, 5*time.Second, 5*time.Millisecond, p.logs())
			}
			after, err := unix.FcntlInt(uintptr(held), unix.F_GETFL, 0)
			require.NoError(t, err)
			require.Equal(t, before, after, "stdin's flags while evspool reads it")
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			p.wait(t, 5*time.Second)
		})
	}
}

// pipeInput is a pipe: evspool's end, the same end as a descriptor the
// test keeps, and the write end.
func pipeInput(t *testing.T) (*os.File, int, io.WriteCloser) {
	var fds [2]int
	require.NoError(t, unix.Pipe2(fds[:], unix.O_CLOEXEC))
	return heldFile(t, fds[0], "stdin"), fds[0], ownedFile(t, fds[1], "w")
}

// socketInput is a Unix stream socket pair: evspool's end, kept by the
// test too, and the other end, to write to and read from (a 5 s limit).
func socketInput(t *testing.T) (*os.File, int, io.WriteCloser) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	tv := unix.NsecToTimeval((5 * time.Second).Nanoseconds())
	require.NoError(t, unix.SetsockoptTimeval(fds[0], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv))
	return heldFile(t, fds[1], "stdin"), fds[1], ownedFile(t, fds[0], "peer")
}

// fileInput is a regular file holding one line; nothing to write.
func fileInput(t *testing.T) (*os.File, int, io.WriteCloser) {
	name := filepath.Join(t.TempDir(), "input")
	require.NoError(t, os.WriteFile(name, []byte("one\n"), 0o600))
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	return heldFile(t, fd, "stdin"), fd, nil
}

// ttyInput is a pseudo-terminal: its slave as evspool's stdin, and its
// master to type into.
func ttyInput(t *testing.T) (*os.File, int, io.WriteCloser) {
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	m := ownedFile(t, master, "ptmx")
	require.NoError(t, unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(master, unix.TIOCGPTN)
	require.NoError(t, err)
	slave, err := unix.Open("/dev/pts/"+strconv.Itoa(n), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	return heldFile(t, slave, "tty"), slave, m
}

// heldFile returns a file of fd's open file description to hand to
// evspool and close, while fd itself stays open until the test ends.
func heldFile(t *testing.T, fd int, name string) *os.File {
	t.Cleanup(func() { unix.Close(fd) })
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	require.NoError(t, err)
	return os.NewFile(uintptr(d), name)
}

// ownedFile is the file of fd, closed at the end of the test if not before.
func ownedFile(t *testing.T, fd int, name string) *os.File {
	f := os.NewFile(uintptr(fd), name)
	t.Cleanup(func() { f.Close() })
	return f
}

func closeInput(t *testing.T, _ *proc, w io.WriteCloser) { require.NoError(t, w.Close()) }

// sendSignals sends sigs one after the other.
func sendSignals(sigs ...syscall.Signal) func(*testing.T, *proc, io.WriteCloser) {
	return func(t *testing.T, p *proc, _ io.WriteCloser) {
		for _, s := range sigs {
			require.NoError(t, p.cmd.Process.Signal(s))
		}
	}
}

// nonblock reports whether fd's open file description is O_NONBLOCK.
func nonblock(t *testing.T, fd int) bool {
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	require.NoError(t, err)
	return flags&unix.O_NONBLOCK != 0
}

// fdinfoNonblock reports whether process pid's fd is O_NONBLOCK, from
// /proc/<pid>/fdinfo/<fd>.
func fdinfoNonblock(t *testing.T, pid, fd int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, fd))
	require.NoError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			require.NoError(t, err)
			return flags&unix.O_NONBLOCK != 0
		}
	}
	t.Fatalf("no flags in %s", data)
	return false
}

// readingStdin reports whether a thread of process pid is in read(2) on fd
// 0, from /proc/<pid>/task/*/syscall (the call's number, then its
// arguments).
func readingStdin(t *testing.T, pid int) bool {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/syscall", pid))
	require.NoError(t, err)
	require.NotEmpty(t, tasks)
	for _, task := range tasks {
		data, err := os.ReadFile(task)
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(data))
		if len(f) >= 2 && f[0] == strconv.Itoa(unix.SYS_READ) && f[1] == "0x0" {
			return true
		}
	}
	return false
}
