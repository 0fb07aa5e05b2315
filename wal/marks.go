package wal

import (
	"encoding/binary"
	"fmt"
	"os"
	"slices"
)

// The marks file beside spool.db keeps, outside the file that may be
// damaged, the numbers salvage needs and cannot always find in what is left
// of spool.db (a truncated or emptied file, a destroyed meta bucket):
//
//	reserved  no sequence number at or above it was ever handed out
//	removed   every sequence number up to it was acked or dropped
//	flags     bit 0 (exact): reserved is the next number to be handed out,
//	          every one below it committed (written by Close and by an
//	          Open that settled the file), so no commit can be under way
//
// Layout: reserved u64 | removed u64 | flags u64, big-endian, through the
// meta codec under the key "marks" (then crc32c of "marks" and the three,
// u32), at offset 0 (28 bytes); migrate.go reads earlier formats. A
// missing or damaged marks file reads as
// zeros (damaged is set and Open logs it): the numbers then come from
// spool.db alone.
//
// reserved is raised in steps of markStep before a commit would reach it,
// and fsync'd (unless NoSync), so it costs one extra fsync per markStep
// events; salvage, and a spool.db created anew, continue numbering from it,
// skipping at most markStep numbers. Close lowers it to the next number
// (fsync'd), with exact set. A reservation above the file's next number at
// Open therefore means a commit may have been cut short (see settle).
// removed is written after each Ack without an fsync: after a power loss
// that also damaged spool.db, some acked events may come back (at least
// once), but none after a process crash.
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
		// Created: make its name durable, or a power loss could take the
		// file (and what it says) away after its contents were synced.
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

// parse reads the numbers from the marks file's contents; a damaged file
// leaves them zero.
func (m *marks) parse(buf []byte) {
	var p []byte
	if len(buf) >= marksSize {
		p, _ = decodeMeta(keyMarks, buf[:marksSize])
	}
	if p == nil {
		p = olderMarks(buf)
	}
	if p == nil {
		// Written but unreadable: a value that fails its check is
		// damage, never trusted. The numbers come from spool.db alone.
		m.damaged = slices.ContainsFunc(buf, func(b byte) bool { return b != 0 })
		return
	}
	m.reserved = binary.BigEndian.Uint64(p[0:8])
	m.removed = binary.BigEndian.Uint64(p[8:16])
	m.exact = len(p) > 16 && binary.BigEndian.Uint64(p[16:24])&1 != 0
}

// reserve makes sure every sequence number below next is covered by the
// reserved mark, before a commit hands them out.
func (m *marks) reserve(next uint64) error {
	if next <= m.reserved {
		return nil
	}
	old, oldExact := m.reserved, m.exact
	m.reserved, m.exact = next+markStep, false
	if err := m.write(); err != nil {
		m.reserved, m.exact = old, oldExact
		return fmt.Errorf("wal: write marks file: %w", err)
	}
	if m.sync {
		if err := m.f.Sync(); err != nil {
			m.reserved, m.exact = old, oldExact
			return fmt.Errorf("wal: sync marks file: %w", err)
		}
	}
	return nil
}

// remove records that every sequence number up to seq has left the spool:
// a write to the page cache, no fsync, so it survives a process crash.
// Where it is only a hint for salvage its error is ignored (salvage may then
// bring those events back); Ack relies on it (see ackdefer.go) and commits
// the deletion at once when it fails.
func (m *marks) remove(seq uint64) error {
	if seq > m.removed {
		m.removed = seq
		return m.write()
	}
	return nil
}

// lower sets the reservation to next, the next number to be handed out, and
// syncs it: called when every number below next is committed and no commit
// is under way (Close, and Open once settled), it tells the next Open that
// the spool was left clean.
func (m *marks) lower(next uint64) error {
	if m.reserved == next && m.exact {
		return nil
	}
	old, oldExact := m.reserved, m.exact
	m.reserved, m.exact = next, true
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

func (m *marks) write() error {
	buf := make([]byte, marksSize)
	binary.BigEndian.PutUint64(buf[0:8], m.reserved)
	binary.BigEndian.PutUint64(buf[8:16], m.removed)
	if m.exact {
		binary.BigEndian.PutUint64(buf[16:24], 1)
	}
	_, err := m.f.WriteAt(encodeMeta(keyMarks, buf[:24]), 0)
	return err
}

func (m *marks) close() error { return m.f.Close() }
