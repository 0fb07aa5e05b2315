//go:build linux

package emitter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerIdent names the process that reads a Unix connection's receiver end.
type peerIdent struct {
	pid   int32
	start uint64 // clock ticks after boot: with pid, one process
	stack uint64 // its stack's start: a re-executed process gets a new one (ASLR)
	ino   uint64 // the inode of its end of the connection
}

// peerEnd returns the inode of the receiver's end of c, or 0 when it cannot
// be told. retry is true when that end has no inode yet because the
// receiver has not accepted: ask again later.
func peerEnd(c net.Conn) (ino uint64, retry bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, false
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var own uint64
	cerr := rc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if err = unix.Fstat(int(fd), &st); err == nil {
			own = st.Ino
		}
	})
	if cerr != nil || err != nil {
		return 0, false
	}
	// Not accepted yet: sock_diag names a peer of inode 0.
	if ino, err = unixPeerIno(own); err != nil || ino == 0 {
		return 0, err == nil
	}
	if gone, err := unixSocketGone(ino); err != nil || gone {
		return 0, false
	}
	return ino, false
}

// readerOf returns the one process in this pid namespace holding the
// receiver's end ino (SO_PEERCRED names the listener, not always the
// reader); why, if not empty, says why none could be named.
func readerOf(ino uint64) (id peerIdent, why string) {
	pids, complete, err := socketHolders(ino)
	switch {
	case err != nil:
		return id, "cannot scan /proc: " + err.Error()
	case !complete:
		return id, "the file descriptors of some processes cannot be read"
	case len(pids) == 0:
		return id, "no process in this pid namespace holds it"
	case len(pids) > 1:
		return id, fmt.Sprintf("%d processes hold it", len(pids))
	}
	id.pid, id.ino = pids[0], ino
	if id.start, id.stack, err = procStart(id.pid); err != nil || id.stack == 0 {
		return peerIdent{}, "its start cannot be read from /proc"
	}
	return id, ""
}

// socketHolders returns the processes that hold the socket ino, from a scan
// of /proc/*/fd, the only way from a socket to its holders. complete is false
// when some process's table could not be read.
func socketHolders(ino uint64) (pids []int32, complete bool, err error) {
	proc, err := os.Open("/proc")
	if err != nil {
		return nil, false, err
	}
	names, err := proc.Readdirnames(-1)
	proc.Close()
	if err != nil {
		return nil, false, err
	}
	target := []byte("socket:[" + strconv.FormatUint(ino, 10) + "]")
	scan := fdScan{target: target, link: make([]byte, len(target)+1), dirents: make([]byte, 8<<10)}
	complete = true
	for _, name := range names {
		pid, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			continue // not a process
		}
		held, ok := scan.holds("/proc/" + name + "/fd")
		complete = complete && ok
		if held {
			pids = append(pids, int32(pid))
		}
	}
	return pids, complete, nil
}

// fdScan looks for one link target in /proc/PID/fd directories.
type fdScan struct {
	target, link, dirents []byte
	names                 []string
}

// holds reports whether the fd directory dir links to the target; ok is
// false when it could not be read (a process that exited is ok).
func (s *fdScan) holds(dir string) (held, ok bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Getdents(fd, s.dirents)
		if err != nil {
			return false, errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH)
		}
		if n <= 0 {
			return false, true
		}
		_, _, s.names = unix.ParseDirent(s.dirents[:n], -1, s.names[:0])
		for _, name := range s.names {
			m, err := unix.Readlinkat(fd, name, s.link)
			if err == nil && m == len(s.target) && string(s.link[:m]) == string(s.target) {
				return true, true
			}
		}
	}
}

// procStart reads fields 22 and 28 of /proc/PID/stat: start time and stack.
func procStart(pid int32) (start, stack uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("emitter: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	if len(f) < 26 {
		return 0, 0, fmt.Errorf("emitter: /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	if start, err = strconv.ParseUint(f[22-3], 10, 64); err != nil {
		return 0, 0, err
	}
	stack, err = strconv.ParseUint(f[28-3], 10, 64)
	return start, stack, err
}

// alive reports whether id's process still runs, not re-executed.
func (id peerIdent) alive() bool {
	start, stack, err := procStart(id.pid)
	return err == nil && start == id.start && stack == id.stack
}

// sock_diag for AF_UNIX (linux/unix_diag.h).
const (
	sockDiagByFamily = 20
	udiagShowPeer    = 0x4
	udiagShowRqlen   = 0x10
	unixDiagPeer     = 2
	unixDiagRqlen    = 4
)

var errNoSocket = errors.New("emitter: no such socket")

// unixPeerIno returns the inode of the other end of the Unix socket ino.
func unixPeerIno(ino uint64) (uint64, error) {
	attrs, err := unixDiag(ino, udiagShowPeer)
	if err != nil {
		return 0, err
	}
	if v, ok := attrs[unixDiagPeer]; ok && len(v) >= 4 {
		return uint64(binary.NativeEndian.Uint32(v)), nil
	}
	return 0, errNoSocket
}

// unixSocketGone reports whether the Unix socket ino no longer exists.
func unixSocketGone(ino uint64) (bool, error) {
	_, err := unixDiag(ino, udiagShowRqlen)
	if errors.Is(err, errNoSocket) {
		return true, nil
	}
	return false, err
}

// unixDiag returns the attributes the kernel gives of the Unix socket ino.
func unixDiag(ino uint64, show uint32) (map[uint16][]byte, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	req := make([]byte, 16+24)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], sockDiagByFamily)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	req[16] = unix.AF_UNIX
	binary.NativeEndian.PutUint32(req[20:], ^uint32(0)) // every state
	binary.NativeEndian.PutUint32(req[24:], uint32(ino))
	binary.NativeEndian.PutUint32(req[28:], show)
	binary.NativeEndian.PutUint32(req[32:], ^uint32(0)) // no cookie
	binary.NativeEndian.PutUint32(req[36:], ^uint32(0))
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return nil, err
	}
	return parseDiag(buf[:n])
}

// parseDiag parses one netlink answer: an error, or a socket's attributes.
func parseDiag(b []byte) (map[uint16][]byte, error) {
	if len(b) < 16 {
		return nil, fmt.Errorf("emitter: sock_diag: short answer")
	}
	if binary.NativeEndian.Uint16(b[4:]) == unix.NLMSG_ERROR {
		if len(b) < 20 {
			return nil, fmt.Errorf("emitter: sock_diag: short error")
		}
		errno := -int32(binary.NativeEndian.Uint32(b[16:]))
		if syscall.Errno(errno) == unix.ENOENT {
			return nil, errNoSocket
		}
		return nil, fmt.Errorf("emitter: sock_diag: %w", syscall.Errno(errno))
	}
	attrs := map[uint16][]byte{}
	for rest := b[min(len(b), 16+16):]; len(rest) >= 4; {
		l := int(binary.NativeEndian.Uint16(rest))
		if l < 4 || l > len(rest) {
			break
		}
		attrs[binary.NativeEndian.Uint16(rest[2:])] = rest[4:l]
		rest = rest[min(len(rest), (l+3)&^3):]
	}
	return attrs, nil
}
