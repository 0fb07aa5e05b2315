package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// The marks file beside spool.db keeps, outside the file that may be
// damaged, the two numbers salvage needs and cannot always find in what is
// left of spool.db (a truncated or emptied file, a destroyed meta bucket):
//
//	reserved  no sequence number at or above it was ever handed out
//	removed   every sequence number up to it was acked or dropped
//
// Layout: reserved u64 | removed u64 | crc32c of both u32, big-endian, at
// offset 0. A missing or damaged marks file reads as zeros: salvage then
// relies on spool.db alone.
//
// reserved is raised in steps of markStep before a commit would reach it,
// and fsync'd (unless NoSync), so it costs one extra fsync per markStep
// events; salvage, and a spool.db created anew, continue numbering from it,
// skipping at most markStep numbers. removed is written after each Ack without an fsync: after a power
// loss that also damaged spool.db, some acked events may come back (at least
// once), but none after a process crash.
const (
	marksFileName = "marks"
	markStep      = 1 << 16
	marksSize     = 20
)

type marks struct {
	f        *os.File
	sync     bool
	reserved uint64
	removed  uint64
}

func openMarks(dir string, sync bool) (*marks, error) {
	path := filepath.Join(dir, marksFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("wal: open marks file: %w", err)
	}
	m := &marks{f: f, sync: sync}
	buf := make([]byte, marksSize)
	if n, _ := f.ReadAt(buf, 0); n == marksSize &&
		binary.BigEndian.Uint32(buf[16:]) == crc32.Checksum(buf[:16], castagnoli) {
		m.reserved = binary.BigEndian.Uint64(buf[0:8])
		m.removed = binary.BigEndian.Uint64(buf[8:16])
	}
	return m, nil
}

// reserve makes sure every sequence number below next is covered by the
// reserved mark, before a commit hands them out.
func (m *marks) reserve(next uint64) error {
	if next <= m.reserved {
		return nil
	}
	old := m.reserved
	m.reserved = next + markStep
	if err := m.write(); err != nil {
		m.reserved = old
		return fmt.Errorf("wal: write marks file: %w", err)
	}
	if m.sync {
		if err := m.f.Sync(); err != nil {
			m.reserved = old
			return fmt.Errorf("wal: sync marks file: %w", err)
		}
	}
	return nil
}

// remove records that every sequence number up to seq has left the spool.
// It is best effort: on failure salvage may bring those events back.
func (m *marks) remove(seq uint64) {
	if seq > m.removed {
		m.removed = seq
		_ = m.write()
	}
}

func (m *marks) write() error {
	buf := make([]byte, marksSize)
	binary.BigEndian.PutUint64(buf[0:8], m.reserved)
	binary.BigEndian.PutUint64(buf[8:16], m.removed)
	binary.BigEndian.PutUint32(buf[16:], crc32.Checksum(buf[:16], castagnoli))
	_, err := m.f.WriteAt(buf, 0)
	return err
}

func (m *marks) close() error { return m.f.Close() }
