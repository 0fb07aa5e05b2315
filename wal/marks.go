package wal

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
)

// The marks file keeps, outside spool.db, the numbers salvage needs if
// spool.db is lost or damaged (docs/spool.md, "On-disk layout"):
//
//	reserved  no sequence number at or above it was ever handed out
//	removed   every sequence number up to it was acked or dropped
//	flags     bit 0 (exact): reserved is the next number, every one below
//	          it committed (set by Close and a settled Open)
//
// The three are big-endian u64s through the meta codec under the key
// "marks"; a missing or damaged file reads as zeros. reserved is raised
// markStep ahead and fsync'd before a commit would reach it, so numbering
// never goes back even if spool.db is lost. removed is written after each
// Ack without fsync: it survives a process crash, not a power loss.
const (
	marksFileName = "marks"
	markStep      = 1 << 16
	marksSize     = 28
)

type marks struct {
	f        *os.File
	sync     bool
	reserved uint64
	removed  uint64
	exact    bool // reserved is exactly the next number (see flags above)
	damaged  bool // the file held something that failed its check
	buf      [marksSize]byte
}

// keyMarks is the marks file's key in the meta codec (metacodec.go).
var keyMarks = []byte("marks")

func openMarks(d *spoolDir, sync bool) (*marks, error) {
	created := !d.exists(marksFileName)
	f, err := d.open(marksFileName, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("wal: open marks file: %w", err)
	}
	if created && sync {
		// Make the new name durable, or a power loss could lose the file.
		if err := d.sync(); err != nil {
			f.Close()
			return nil, fmt.Errorf("wal: sync spool directory %s: %w", d.path, err)
		}
	}
	m := &marks{f: f, sync: sync}
	buf := make([]byte, marksSize)
	n, _ := f.ReadAt(buf, 0)
	m.parse(buf[:n])
	return m, nil
}

// parse reads the marks file's contents; a damaged file leaves zeros.
func (m *marks) parse(buf []byte) {
	var p []byte
	if len(buf) >= marksSize {
		p, _ = decodeMeta(keyMarks, buf[:marksSize])
	}
	if p == nil {
		p = olderMarks(buf)
	}
	if p == nil {
		// A value that fails its check is never trusted.
		m.damaged = slices.ContainsFunc(buf, func(b byte) bool { return b != 0 })
		return
	}
	m.reserved = binary.BigEndian.Uint64(p[0:8])
	m.removed = binary.BigEndian.Uint64(p[8:16])
	m.exact = len(p) > 16 && binary.BigEndian.Uint64(p[16:24])&1 != 0
}

// reserve durably covers every number below next before a commit uses them.
func (m *marks) reserve(next uint64) error {
	if next <= m.reserved {
		return nil
	}
	return m.set(next+markStep, false)
}

// remove records that every sequence number up to seq has left the spool,
// without fsync (it survives a process crash). Ack commits the deletion at
// once when it fails.
func (m *marks) remove(seq uint64) error {
	if seq > m.removed {
		m.removed = seq
		return m.write()
	}
	return nil
}

// lower sets the reservation to next, exact, and syncs it: called when every
// number below next is committed and no commit is under way (Close, a
// settled Open), it tells the next Open the spool was left clean.
func (m *marks) lower(next uint64) error {
	if m.reserved == next && m.exact {
		return nil
	}
	return m.set(next, true)
}

// set writes and syncs a new reservation, keeping the old one on failure.
func (m *marks) set(reserved uint64, exact bool) error {
	old, oldExact := m.reserved, m.exact
	m.reserved, m.exact = reserved, exact
	err := m.write()
	if err == nil && m.sync {
		err = m.f.Sync()
	}
	if err != nil {
		m.reserved, m.exact = old, oldExact
		return fmt.Errorf("wal: write marks file: %w", err)
	}
	return nil
}

// write writes the three numbers, checksummed as encodeMeta does, from a
// buffer of its own: every Ack writes them.
func (m *marks) write() error {
	buf := m.buf[:]
	binary.BigEndian.PutUint64(buf[0:8], m.reserved)
	binary.BigEndian.PutUint64(buf[8:16], m.removed)
	var flags uint64
	if m.exact {
		flags = 1
	}
	binary.BigEndian.PutUint64(buf[16:24], flags)
	binary.BigEndian.PutUint32(buf[24:], keySum(keyMarks, buf[:24]))
	_, err := m.f.WriteAt(buf, 0)
	return err
}
