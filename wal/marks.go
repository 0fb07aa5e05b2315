package wal

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime/debug"
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
// "marks" (bytes 0-27). reserved is raised markStep ahead and fsync'd
// before a commit would reach it, so numbering never goes back even if
// spool.db is lost.
//
// Each Ack raises removed alone, without fsync (it survives a process
// crash, not a power loss), in one of two ack slots (bytes 32-43 and
// 48-59: removed through the codec under the key "acked"), written in
// turn: a process killed in mid-write leaves the other slot whole. The
// larger of the sound removed numbers counts; a slot that fails its check
// only costs resends, and a damaged first 28 bytes read as zeros.
//
// On Linux an Ack stores its slot into a shared mapping of the file: no
// system call, and the file's times change once a writeback rather than
// once an Ack. A fault
// on the mapping (the file cut short under it, no block to back the page)
// is caught; the marks file is then written with pwrite(2). Against a
// pwrite(2) each Ack, the store saves 9% of the CPU an event at 100 events/s
// and 1% at 1,000/s (node-cost, evspool-fsync / evspool-fsync-noackslot,
// 9 rounds pooled: bench/README.md, node-cost-55m1-3).
const (
	marksFileName = "marks"
	markStep      = 1 << 16
	marksSize     = 28
	ackSlotAt     = 32 // the first ack slot; the second follows it
	ackSlotSize   = 16 // removed u64 | checksum u32, padded
	ackSlotUsed   = 8 + metaSumSize
	marksFileSize = ackSlotAt + 2*ackSlotSize
)

// ackSlotOff is where ack slot i (0 or 1) starts in the file.
func ackSlotOff(i int) int { return ackSlotAt + i*ackSlotSize }

type marks struct {
	f        *os.File
	sync     bool
	reserved uint64
	removed  uint64
	exact    bool   // reserved is exactly the next number (see flags above)
	damaged  bool   // the first 28 bytes held something that failed their check
	slot     int    // the ack slot the next Ack writes: not the one holding removed
	mapped   []byte // the file's 64 bytes, mapped shared; nil: pwrite(2)
	unmap    func()
	buf      [marksSize]byte
	ackBuf   [ackSlotSize]byte // its own: every Ack writes it
}

// keyMarks is the marks file's key in the meta codec (metacodec.go).
var keyMarks = []byte("marks")

// keyAcked is an ack slot's key in the meta codec.
var keyAcked = []byte("acked")

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
	buf := make([]byte, marksFileSize)
	n, _ := f.ReadAt(buf, 0)
	m.parse(buf[:n])
	if n < marksFileSize {
		// Room for the ack slots; lost to a power cut, they cost resends.
		if err := f.Truncate(marksFileSize); err != nil {
			f.Close()
			return nil, fmt.Errorf("wal: extend marks file: %w", err)
		}
	}
	m.mapped, m.unmap, _ = mapShared(f, marksFileSize) // else pwrite(2)
	return m, nil
}

// close unmaps and closes the file.
func (m *marks) close() error {
	m.dropMap()
	return m.f.Close()
}

func (m *marks) dropMap() {
	if m.mapped != nil {
		m.unmap()
		m.mapped, m.unmap = nil, nil
	}
}

// parse reads the marks file's contents: the numbers (a damaged value
// leaves zeros), then the ack slots, the larger sound one raising removed.
func (m *marks) parse(buf []byte) {
	m.parseNumbers(buf[:min(len(buf), marksSize)])
	var acked [2]uint64
	for i := range acked {
		at := ackSlotOff(i)
		if len(buf) < at+ackSlotUsed {
			break
		}
		acked[i], _ = metaUint(keyAcked, buf[at:at+ackSlotUsed]) // unsound: 0
	}
	m.removed = max(m.removed, acked[0], acked[1])
	if acked[0] > acked[1] {
		m.slot = 1
	}
}

func (m *marks) parseNumbers(buf []byte) {
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
// in the next ack slot, without fsync (it survives a process crash). Ack
// commits the deletion at once when it fails.
func (m *marks) remove(seq uint64) error {
	if seq <= m.removed {
		return nil
	}
	v := m.ackBuf[:]
	binary.BigEndian.PutUint64(v, seq)
	sealMeta(keyAcked, v[:ackSlotUsed])
	if err := m.writeAt(v, ackSlotOff(m.slot)); err != nil {
		return fmt.Errorf("wal: write marks file: %w", err)
	}
	m.removed = seq
	m.slot ^= 1
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

// write writes the three numbers, checksummed as encodeMeta does.
func (m *marks) write() error {
	buf := m.buf[:]
	binary.BigEndian.PutUint64(buf[0:8], m.reserved)
	binary.BigEndian.PutUint64(buf[8:16], m.removed)
	var flags uint64
	if m.exact {
		flags = 1
	}
	binary.BigEndian.PutUint64(buf[16:24], flags)
	sealMeta(keyMarks, buf)
	return m.writeAt(buf, 0)
}

// writeAt writes b at off: into the mapping if there is one, else (and
// from a fault on, for good) with pwrite(2).
func (m *marks) writeAt(b []byte, off int) error {
	if m.mapped != nil {
		if storeMapped(m.mapped[off:off+len(b)], b) == nil {
			return nil
		}
		m.dropMap()
	}
	_, err := m.f.WriteAt(b, int64(off))
	return err
}

// storeMapped copies b into dst, a shared mapping, and returns a fault on
// it (SIGBUS) as an error rather than crash.
func storeMapped(dst, b []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("wal: store into the mapped marks file: %v", r)
		}
	}()
	copy(dst, b)
	return nil
}
