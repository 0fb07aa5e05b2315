package pathwatch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Watch reports when a file of one name appears in one directory.
type Watch struct {
	f    *os.File
	name []byte
	buf  []byte
}

// New watches for path to appear. The directory must exist; the path may or
// may not. Only appearances after New are reported.
func New(path string) (*Watch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("pathwatch: inotify_init1: %w", err)
	}
	dir := filepath.Dir(path)
	mask := uint32(unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR)
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pathwatch: watch directory %s: %w", dir, err)
	}
	// Non-blocking, so os.NewFile hands it to the runtime's poller.
	return &Watch{f: os.NewFile(uintptr(fd), "inotify:"+dir), name: []byte(filepath.Base(path)),
		buf: make([]byte, 16*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))}, nil
}

// Wait returns true once the path is created or renamed into place (at
// once if that happened since the last Wait), false once ctx has ended.
func (w *Watch) Wait(ctx context.Context) (bool, error) {
	if err := w.f.SetReadDeadline(time.Time{}); err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, func() { w.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	for {
		n, err := w.f.Read(w.buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("pathwatch: read inotify events: %w", err)
		}
		appeared, gone := w.parse(w.buf[:n])
		if appeared {
			return true, nil
		}
		if gone {
			return false, ErrGone
		}
	}
}

// parse reads a buffer of inotify events.
func (w *Watch) parse(buf []byte) (appeared, gone bool) {
	for len(buf) >= unix.SizeofInotifyEvent {
		// struct inotify_event: wd i32, mask u32, cookie u32, len u32, name.
		mask := binary.NativeEndian.Uint32(buf[4:])
		end := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[12:]))
		if end > len(buf) {
			break
		}
		name := bytes.TrimRight(buf[unix.SizeofInotifyEvent:end], "\x00")
		switch {
		case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 && bytes.Equal(name, w.name):
			appeared = true
		case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0:
			gone = true
		}
		buf = buf[end:]
	}
	return appeared, gone
}

// Close releases the inotify descriptor.
func (w *Watch) Close() error { return w.f.Close() }
