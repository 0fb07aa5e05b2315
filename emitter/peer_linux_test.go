//go:build linux

package emitter

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/internal/testrecv"
)

// The reader of a connection is the one process holding the receiver's
// end: here this process, then this process and a child that inherited it
// (two: no reader), then nobody (closed).
func TestReaderIsTheHolder(t *testing.T) {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	require.NoError(t, err)
	defer ln.Close()
	c, err := net.Dial("unix", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	ino, retry := peerEnd(c)
	assert.Zero(t, ino, "not accepted yet: the receiver's end has no inode")
	assert.True(t, retry, "that passes: ask again")
	s, err := ln.Accept()
	require.NoError(t, err)
	ino, _ = peerEnd(c)
	require.NotZero(t, ino)

	id, why := readerOf(ino)
	require.Empty(t, why)
	assert.EqualValues(t, os.Getpid(), id.pid, "the one holder")
	assert.Equal(t, ino, id.ino)
	assert.True(t, id.alive())
	assert.False(t, peerIdent{pid: id.pid, start: id.start + 1, stack: id.stack}.alive(), "another process")

	f, err := s.(*net.UnixConn).File()
	require.NoError(t, err)
	child := exec.Command("sleep", "60")
	child.ExtraFiles = []*os.File{f}
	require.NoError(t, child.Start())
	f.Close()
	_, why = readerOf(ino)
	assert.Equal(t, "2 processes hold it", why, "a child holds it too: which one reads cannot be told")
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	_, why = readerOf(ino)
	assert.Empty(t, why, "one holder again")

	gone, err := unixSocketGone(ino)
	require.NoError(t, err)
	assert.False(t, gone, "the receiver's end is open")
	require.NoError(t, s.Close())
	gone, err = unixSocketGone(ino)
	require.NoError(t, err)
	assert.True(t, gone, "closed")
	_, why = readerOf(ino)
	assert.Equal(t, "no process in this pid namespace holds it", why)
}

// A pre-fork receiver: SO_PEERCRED names its master, which listens; the
// reader is its worker, which accepted the connection.
func TestReaderIsTheWorkerNotTheListener(t *testing.T) {
	dir, err := os.MkdirTemp("", "rd")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "s.sock")
	p, err := testrecv.StartPreFork(testrecv.PreForkConfig{Addr: sock, Out: filepath.Join(dir, "handled")})
	require.NoError(t, err)
	defer p.Kill()
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer c.Close()
	var ino uint64
	require.Eventually(t, func() bool { ino, _ = peerEnd(c); return ino != 0 }, 5*time.Second, time.Millisecond, "accepted")
	id, why := readerOf(ino)
	require.Empty(t, why)
	workers := p.Workers()
	require.Len(t, workers, 1)
	assert.EqualValues(t, workers[0], id.pid, "the worker reads")
	assert.NotEqualValues(t, p.Master(), id.pid, "not the listener")
}

// sock_diag sees the Unix sockets of its own network namespace only; the
// kernel creates a connection's accepted end in the connecting side's, so
// a receiver listening in another namespace (a socket path shared between
// them) still has its end seen, and its close.
func TestPeerEndOfAListenerInAnotherNetworkNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("unsharing a network namespace takes root")
	}
	sock := filepath.Join(t.TempDir(), "s")
	type result struct {
		ln  net.Listener
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with its namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			res <- result{err: err}
			return
		}
		ln, err := net.Listen("unix", sock)
		res <- result{ln, err}
	}()
	r := <-res
	require.NoError(t, r.err)
	defer r.ln.Close()
	c, err := net.Dial("unix", sock)
	require.NoError(t, err)
	defer c.Close()
	s, err := r.ln.Accept()
	require.NoError(t, err)
	defer s.Close()
	ino, _ := peerEnd(c)
	require.NotZero(t, ino, "the receiver's end is seen")
	gone, err := unixSocketGone(ino)
	require.NoError(t, err)
	assert.False(t, gone)
	require.NoError(t, s.Close())
	gone, err = unixSocketGone(ino)
	require.NoError(t, err)
	assert.True(t, gone, "its close is seen")
}

// BenchmarkReaderScan is what finding a connection's reader costs, once a
// connection: a scan of every process's file descriptors. It prints the
// processes and descriptors of the machine it ran on.
func BenchmarkReaderScan(b *testing.B) {
	ln, err := net.Listen("unix", filepath.Join(b.TempDir(), "s"))
	require.NoError(b, err)
	defer ln.Close()
	c, err := net.Dial("unix", ln.Addr().String())
	require.NoError(b, err)
	defer c.Close()
	s, err := ln.Accept()
	require.NoError(b, err)
	defer s.Close()
	ino, _ := peerEnd(c)
	require.NotZero(b, ino)
	procs, fds := procCounts()
	b.ResetTimer()
	for b.Loop() {
		if _, why := readerOf(ino); why != "" {
			b.Fatal(why)
		}
	}
	b.ReportMetric(float64(procs), "processes")
	b.ReportMetric(float64(fds), "fds")
}

// procCounts counts the processes and their file descriptors.
func procCounts() (procs, fds int) {
	names, _ := filepath.Glob("/proc/[0-9]*/fd")
	for _, n := range names {
		ents, err := os.ReadDir(n)
		if err == nil {
			procs++
			fds += len(ents)
		}
	}
	return procs, fds
}

// An evspool killed after its first write on a connection must leave a note
// naming that connection's receiver, or the next start neither waits for
// the receiver to finish the old connection nor knows what it handled, and
// its resend interleaves with the old connection's last lines (out of
// order: TestPrecisionEvspoolKills, about 1 run in 6). So the receiver's
// end is noted before anything is written: when its first byte arrives,
// the note is there; its reader is added once it has read. The receiver here accepts 300 ms late, as a
// loaded one did; before, the event was written at once, into a
// connection not yet accepted, and noted only at a later write or idle
// check.
func TestReceiverNotedBeforeTheFirstWrite(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	spool := filepath.Join(dir, "spool")
	em, err := Open(sock, spool, &Options{NoSync: true, Stdout: io.Discard})
	require.NoError(t, err)
	defer em.Close(context.Background())
	require.NoError(t, em.Emit(context.Background(), []byte("first event")))

	time.Sleep(300 * time.Millisecond) // a receiver slow to accept
	c, err := ln.Accept()
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	line, err := bufio.NewReader(c).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "first event\n", line)

	m, err := ledger.ReadPeerMark(spool)
	require.NoError(t, err, "no note of the receiver when its first byte arrived")
	var st syscall.Stat_t
	f, err := c.(*net.UnixConn).File()
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Fstat(int(f.Fd()), &st))
	assert.Equal(t, st.Ino, m.Ino, "this connection's receiver end")

	// Its reader is looked for once it has read: this process, the one
	// holding that end.
	require.Eventually(t, func() bool {
		m, err = ledger.ReadPeerMark(spool)
		return err == nil && m.Pid != 0
	}, 5*time.Second, time.Millisecond, "the reader noted after its first read")
	assert.EqualValues(t, os.Getpid(), m.Pid)
	assert.Equal(t, st.Ino, m.Ino)
}
