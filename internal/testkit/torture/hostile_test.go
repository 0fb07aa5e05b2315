package torture

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

// Bytes pass through as they are: invalid UTF-8, CR, NUL; a line over the
// limit is refused and the lines around it flow on.
func TestHostileLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	rcv, err := refrecv.Start("unix", sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	want := []string{"plain", "invalid utf-8 \xff\xfe\xc3", "carriage return\r", "nul \x00 inside", "\r", "tab\tand\vvt"}
	input := strings.Join(want[:3], "\n") + "\n" + strings.Repeat("z", 70000) + "\n" + strings.Join(want[3:], "\n") + "\n"
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", filepath.Join(dir, "spool"))
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var ee *exec.ExitError
	require.ErrorAs(t, cmd.Run(), &ee, stderr.String())
	require.Equal(t, 4, ee.ExitCode(), "the refused line is lost: %s", stderr.String())
	require.Contains(t, stderr.String(), "refused=1 ")
	require.Equal(t, strings.Join(want, "\n")+"\n", stdout.String())
	require.Contains(t, stderr.String(), "size=70001")
	require.Contains(t, stderr.String(), "limit=65536")
	require.Eventually(t, func() bool { return rcv.Count() == len(want) }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, want, rcv.Lines())
}

// A stream with no newline at all: refused in the end, memory bounded all along.
func TestEndlessLineMemoryBounded(t *testing.T) {
	t.Parallel()
	size := 256 << 20
	if long() {
		size = 1 << 30
	}
	dir := t.TempDir()
	c := startChild(t, binary, nil, "run", "--socket", filepath.Join(dir, "s.sock"), "--spool", filepath.Join(dir, "spool"),
		"--drain-timeout", "1s")
	chunk := bytes.Repeat([]byte("n"), 1<<20)
	for sent := 0; sent < size; sent += len(chunk) {
		_, err := c.stdin.Write(chunk)
		require.NoError(t, err)
	}
	peak := vmHWM(t, c.cmd.Process.Pid)
	_, err := c.stdin.Write([]byte("\nlast line\n"))
	require.NoError(t, err)
	require.NoError(t, c.stdin.Close())
	code := c.exitCode(t, 30*time.Second)
	t.Logf("%d MiB without a newline: peak RSS %d MiB", size>>20, peak>>20)
	require.Less(t, peak, int64(100<<20), "memory must stay bounded")
	require.Equal(t, 4, code, "the endless line is lost (refused), the last line stays spooled: there is no receiver")
	require.Contains(t, c.logs(), "size="+strconv.Itoa(size+1))
	require.Equal(t, []string{"last line"}, c.lines())
}

// vmHWM is a process's peak resident memory, from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if kb, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
			require.NoError(t, err)
			return n << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

func TestStdinClosedAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(binary, "run", "--socket", filepath.Join(dir, "s.sock"), "--spool", filepath.Join(dir, "spool"))
	cmd.Stdin = bytes.NewReader(nil)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "nothing read, nothing owed: exit 0\n%s", out)
}

// Socket paths that can never work: evspool keeps running and spooling,
// says what is wrong, and exits 3 at the drain timeout with the events kept.
// Something other than a socket at the path is said so, once, and not
// reported as a receiver outage (Linux refuses the dial as it refuses a
// socket nobody listens on).
func TestBadSocketPaths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular-file")
	require.NoError(t, os.WriteFile(regular, []byte("not a socket"), 0o600))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	require.NoError(t, err)
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, ln.Close()) // the socket file stays, nobody listens
	tests := []struct {
		name, path, class, says string
		outage                  int // "receiver unreachable" lines
	}{
		{"regular file", regular, "not_a_socket", "not a socket: regular file at " + regular, 0},
		{"directory", dir, "not_a_socket", "not a socket: directory at " + dir, 0},
		{"fifo", fifo, "not_a_socket", "not a socket: FIFO at " + fifo, 0},
		{"stale socket", stale, "connection_refused", "connection refused", 1},
		{"missing", filepath.Join(dir, "absent.sock"), "no_such_socket", "no such file", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, "run", "--socket", tt.path, "--spool", t.TempDir()+"/spool", "--drain-timeout", "1s")
			cmd.Stdin = strings.NewReader("kept\n")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			require.Equal(t, 3, ee.ExitCode(), "%s", out)
			require.Contains(t, string(out), "error_class="+tt.class)
			require.Contains(t, string(out), tt.says)
			require.Equal(t, tt.outage, strings.Count(string(out), "receiver unreachable"), "one warning per outage: %s", out)
			notSocket := 0
			if tt.outage == 0 {
				notSocket = 1
			}
			require.Equal(t, notSocket, strings.Count(string(out), "the socket path is not a socket"),
				"a wrong path is reported once, however many dials fail: %s", out)
		})
	}
	t.Run("too long for a unix socket", func(t *testing.T) {
		long := "/tmp/" + strings.Repeat("d", 120) + ".sock"
		cmd := exec.Command(binary, "run", "--socket", long, "--spool", t.TempDir()+"/spool", "--drain-timeout", "1s")
		cmd.Stdin = strings.NewReader("x\n")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", out)
		require.Equal(t, 2, ee.ExitCode(), "%s", out)
		require.Contains(t, string(out), "too long")
	})
}

// A receiver that writes garbage back while it reads: evspool ignores what it
// is sent and delivers everything.
func TestReceiverWritesGarbage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan string, 10000)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go func() {
					junk := noise(64 << 10)
					for i := 0; i < 64; i++ {
						if _, err := c.Write(junk); err != nil {
							return
						}
					}
				}()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					got <- sc.Text()
				}
			}()
		}
	}()
	var want []string
	for i := 0; i < 3000; i++ {
		want = append(want, event(i))
	}
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", filepath.Join(dir, "spool"), "--drain-timeout", "20s")
	cmd.Stdin = strings.NewReader(strings.Join(want, "\n") + "\n")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var lines []string
	timeout := time.After(5 * time.Second)
	for len(lines) < len(want) {
		select {
		case l := <-got:
			lines = append(lines, l)
		case <-timeout:
			t.Fatalf("received %d of %d", len(lines), len(want))
		}
	}
	require.Equal(t, want, lines)
}

// A socket evspool may not connect to: it says so (error_class=permission)
// and keeps the events. As root, permissions do not apply, so evspool runs as
// nobody (uid 65534).
func TestSocketPermissionDenied(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "evspool-perm")
	require.NoError(t, err)
	defer os.RemoveAll(base)
	require.NoError(t, os.Chmod(base, 0o755))
	locked := filepath.Join(base, "locked")
	require.NoError(t, os.Mkdir(locked, 0o700))
	sock := filepath.Join(locked, "s.sock")
	rcv, err := refrecv.Start("unix", sock, nil)
	require.NoError(t, err)
	defer rcv.Close()
	spool := filepath.Join(base, "spool")
	cmd := exec.Command(binary, "run", "--socket", sock, "--spool", spool, "--drain-timeout", "300ms")
	if os.Geteuid() == 0 {
		require.NoError(t, os.Mkdir(spool, 0o700))
		require.NoError(t, os.Chown(spool, 65534, 65534))
		require.NoError(t, os.Chmod(filepath.Dir(binary), 0o755))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	} else {
		require.NoError(t, os.Chmod(locked, 0))
		defer os.Chmod(locked, 0o700)
	}
	cmd.Stdin = strings.NewReader("kept\n")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "%s", out)
	require.Equal(t, 3, ee.ExitCode(), "%s", out)
	require.Contains(t, string(out), "error_class=permission")
	require.Zero(t, rcv.Count())
}
