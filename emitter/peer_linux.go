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

// peerIdent names the receiver process at the other end of a Unix socket,
// and its end of the connection.
type peerIdent struct {
	pid   int32
	start uint64 // clock ticks after boot: with pid, one process
	stack uint64 // its stack's start: a re-executed process gets a new one (ASLR)
	ino   uint64 // the inode of its end of the connection
}

// identify returns the receiver's identity, ok false when it cannot be
// told: not a Unix socket, a receiver in another pid namespace (pid 0),
// /proc unreadable, or a stack address hidden from us. retry is true when
// the only thing missing is the receiver's end of the connection, which has
// no inode until it accepts the connection: identify again later.
func identify(c net.Conn) (id peerIdent, ok, retry bool) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peerIdent{}, false, false
	}
	rc, err := uc.SyscallConn()
	if err != nil {
		return peerIdent{}, false, false
	}
	var ino uint64
	cerr := rc.Control(func(fd uintptr) {
		cred, e := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if e != nil {
			err = e
			return
		}
		id.pid = cred.Pid
		var st unix.Stat_t
		if err = unix.Fstat(int(fd), &st); err == nil {
			ino = st.Ino
		}
	})
	if cerr != nil || err != nil || id.pid <= 0 {
		return peerIdent{}, false, false
	}
	if id.start, id.stack, err = procStart(id.pid); err != nil || id.stack == 0 {
		return peerIdent{}, false, false
	}
	if id.ino, err = unixPeerIno(ino); err != nil || id.ino == 0 {
		// Not accepted yet: sock_diag names a peer of inode 0. An error
		// (ENOENT from a kernel without unix_diag, say) will not pass.
		return peerIdent{}, false, err == nil
	}
	return id, true, false
}

// procStart reads a process's start time and stack start from
// /proc/PID/stat (fields 22 and 28).
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

// alive reports whether the process id names is still that process, not
// re-executed.
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

// unixSocketGone reports whether the Unix socket ino no longer exists (its
// owner closed it, or died).
func unixSocketGone(ino uint64) (bool, error) {
	_, err := unixDiag(ino, udiagShowRqlen)
	if errors.Is(err, errNoSocket) {
		return true, nil
	}
	return false, err
}

// unixDiag asks the kernel about one Unix socket by inode and returns its
// attributes.
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

// parseDiag parses one netlink answer: an error, or a unix_diag_msg and its
// attributes.
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
