package ledger

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapNote maps the note's bytes of f shared, first extending a shorter file
// with zeros (which read as no note); nil where it cannot.
func mapNote(f *os.File) []byte {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if fi.Size() < peerMarkSize {
		if err := f.Truncate(peerMarkSize); err != nil {
			return nil
		}
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var m []byte
	_ = sc.Control(func(fd uintptr) {
		m, err = unix.Mmap(int(fd), 0, peerMarkSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	})
	if err != nil {
		return nil
	}
	return m
}

func unmapNote(m []byte) { _ = unix.Munmap(m) }
