package wal

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// spoolDir is a spool directory held open. Every file of the spool is used
// relative to it (openat(2) and kin), so a directory swapped after Open does
// not move the spool. No call follows a symbolic link, files are created
// 0600, and anything but a regular file is refused with ErrUnsafeFile.
type spoolDir struct {
	path string
	f    *os.File // the directory, for fsync and to keep fd open
	fd   int
	// fsync makes the directory's entries durable: Options.fsyncDir for
	// the spool Open opened it for, else (*os.File).Sync.
	fsync func(path string, d *os.File) error
}

// openSpoolDir opens the directory at path, never through a symbolic link.
// With owned (to write) it must pass checkOwned.
func openSpoolDir(path string, owned bool) (*spoolDir, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil {
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				target, _ := os.Readlink(path)
				return nil, fmt.Errorf("%w: spool path %s is a symbolic link (to %s); evspool never follows one to its spool: give --spool the directory itself",
					ErrUnsafeDir, path, target)
			case unix.S_IFDIR:
			default:
				return nil, fmt.Errorf("wal: spool path %s is %s, not a directory: give --spool a directory", path, kindOf(uint32(st.Mode)))
			}
		}
		return nil, fmt.Errorf("wal: spool directory: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	d := &spoolDir{path: path, f: os.NewFile(uintptr(fd), path), fd: fd}
	if owned {
		if err := d.checkOwned(); err != nil {
			d.close()
			return nil, err
		}
	}
	return d, nil
}

// checkOwned refuses a directory another user owns or can write to (even
// sticky): they could plant links under names the spool has yet to create.
func (d *spoolDir) checkOwned() error {
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return fmt.Errorf("wal: spool directory: %w", &os.PathError{Op: "fstat", Path: d.path, Err: err})
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("%w: %s belongs to %s, and this process runs as %s; give --spool a directory of this user's (a missing one is created 0700), or, if %s is meant to be this user's spool, run chown %d %s",
			ErrDirOwner, d.path, userName(st.Uid), userName(uint32(euid)), d.path, euid, d.path)
	}
	if perm := os.FileMode(st.Mode) & 0o777; perm&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by other users (mode %v); run chmod 700 %s or pick a directory only this user can write (on a mount such as a Kubernetes emptyDir, give a subdirectory of it: it is created 0700)",
			ErrUnsafeDir, d.path, perm, d.path)
	}
	return nil
}

// userName names uid for a message: "uid 65534 (nobody)".
func userName(uid uint32) string {
	s := "uid " + strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		s += " (" + u.Username + ")"
	}
	return s
}

// join is name's path, for messages and reports.
func (d *spoolDir) join(name string) string { return filepath.Join(d.path, name) }

// open opens name with flag, creating it 0600. Anything but a regular file
// is refused (ErrUnsafeFile): opened non-blocking, checked, never used.
func (d *spoolDir) open(name string, flag int) (*os.File, error) {
	fd, err := openat(d.fd, name, flag|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0o600)
	if err != nil {
		if st, serr := d.stat(name); serr == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, d.unsafeErr(name, uint32(st.Mode))
		}
		return nil, &os.PathError{Op: "open", Path: d.join(name), Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: d.join(name), Err: err}
	}
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, d.unsafeErr(name, uint32(st.Mode))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fcntl", Path: d.join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), d.join(name)), nil
}

// openat retries open on EINTR (a FIFO's open can be interrupted).
func openat(dirfd int, name string, flag int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, flag, perm)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func (d *spoolDir) unsafeErr(name string, mode uint32) error {
	what := kindOf(mode)
	if mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(d.fd, name, buf); err == nil {
			what += " to " + string(buf[:n])
		}
	}
	return fmt.Errorf("%w: %s is %s; evspool never follows a link or uses anything but a file of its own there: remove it, and find out who put it there",
		ErrUnsafeFile, d.join(name), what)
}

// kindOf names the file type of a stat(2) mode.
func kindOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "a device"
}

// stat returns name's attributes, of the link itself where it is one.
func (d *spoolDir) stat(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return st, &os.PathError{Op: "stat", Path: d.join(name), Err: err}
	}
	return st, nil
}

// exists reports whether name is in the directory, whatever it is.
func (d *spoolDir) exists(name string) bool {
	_, err := d.stat(name)
	return err == nil
}

// size is the size of name, a regular file; 0 if it cannot be read.
func (d *spoolDir) size(name string) int64 {
	st, err := d.stat(name)
	if err != nil || uint32(st.Mode)&unix.S_IFMT != unix.S_IFREG {
		return 0
	}
	return st.Size
}

// rename renames from to to; a link named to is replaced, not followed.
func (d *spoolDir) rename(from, to string) error {
	if err := unix.Renameat(d.fd, from, d.fd, to); err != nil {
		return &os.LinkError{Op: "rename", Old: d.join(from), New: d.join(to), Err: err}
	}
	return nil
}

// link makes to a hard link of from (a link itself, never its target).
func (d *spoolDir) link(from, to string) error {
	if err := unix.Linkat(d.fd, from, d.fd, to, 0); err != nil {
		return &os.LinkError{Op: "link", Old: d.join(from), New: d.join(to), Err: err}
	}
	return nil
}

// remove removes name (a link itself, never its target).
func (d *spoolDir) remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return &os.PathError{Op: "remove", Path: d.join(name), Err: err}
	}
	return nil
}

// names lists the names in the directory.
func (d *spoolDir) names() ([]string, error) {
	fd, err := openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.path, Err: err}
	}
	f := os.NewFile(uintptr(fd), d.path)
	defer f.Close()
	return f.Readdirnames(-1)
}

// readFile reads name whole.
func (d *spoolDir) readFile(name string) ([]byte, error) {
	f, err := d.open(name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// replace writes data to name through a temporary file renamed over it (not
// synced): readers see old or new contents, and no link is written through.
func (d *spoolDir) replace(name string, data []byte) error {
	tmp := name + ".tmp"
	if err := d.remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := d.open(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	err = cmp.Or(err, f.Close())
	if err == nil {
		err = d.rename(tmp, name)
	}
	if err != nil {
		_ = d.remove(tmp)
	}
	return err
}

// sync makes the directory's entries durable.
func (d *spoolDir) sync() error {
	if d.fsync != nil {
		return d.fsync(d.path, d.f)
	}
	return d.f.Sync()
}

func (d *spoolDir) close() error { return d.f.Close() }

// withSpoolDir runs fn on the spool directory at path, opened for it.
func withSpoolDir(path string, owned bool, fn func(d *spoolDir) error) error {
	d, err := openSpoolDir(path, owned)
	if err != nil {
		return err
	}
	defer d.close()
	return fn(d)
}

// WriteFile atomically replaces the file name in the spool directory dir
// with data (not synced), never through a link.
func WriteFile(dir, name string, data []byte) error {
	return withSpoolDir(dir, true, func(d *spoolDir) error { return d.replace(name, data) })
}

// ReadFile reads the file name in the spool directory dir, never through a link.
func ReadFile(dir, name string) (b []byte, err error) {
	err = withSpoolDir(dir, false, func(d *spoolDir) error {
		b, err = d.readFile(name)
		return err
	})
	return b, err
}

// OpenFile opens the file name in the spool directory dir with flag (creating
// it 0600), never through a link; to write, dir must be one Open accepts.
func OpenFile(dir, name string, flag int) (f *os.File, err error) {
	owned := flag&(os.O_WRONLY|os.O_RDWR) != 0
	err = withSpoolDir(dir, owned, func(d *spoolDir) error {
		f, err = d.open(name, flag)
		return err
	})
	return f, err
}

// Rename renames from to to in the spool directory dir, never through a link.
func Rename(dir, from, to string) error {
	return withSpoolDir(dir, true, func(d *spoolDir) error { return d.rename(from, to) })
}
