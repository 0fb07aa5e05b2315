package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"runtime/debug"

	"github.com/evspool/evspool/wal"
)

// PeerFile is the file in a spool directory where the emitter notes which
// receiver process it writes to and the last event written there, so that a
// restarted evspool finding the same receiver need not resend. Never
// fsync'd: it matters only while that receiver lives, which a power loss ends.
const PeerFile = "receiver"

// PeerMark is one note in the PeerFile.
type PeerMark struct {
	Pid     int32  // the process that reads the connection (the one holding Ino); 0: not known
	Start   uint64 // its start time, in clock ticks since boot (/proc/PID/stat)
	Stack   uint64 // its stack's start address: changes when it re-executes itself
	Ino     uint64 // the inode of its end of the connection
	Through uint64 // the last sequence written on that connection (before the first write: the last acknowledged, maybe 0)
}

// peerMarkVersion leads a note; version 1 notes are not used.
const peerMarkVersion = 2

const peerMarkSize = 1 + 4 + 8*4 + 4 // version, fields, then a CRC-32C

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// PeerNotes writes PeerMarks. It is not safe for concurrent use.
//
// The emitter writes a note after each write to the receiver, so on Linux
// PeerNotes stores it into a shared mapping of the file: into the page
// cache, as pwrite(2) would, without a system call (the first store after
// the kernel wrote the page back faults once to mark it dirty again). A
// process kill keeps it as it keeps a pwrite; a note torn by a kill in the
// middle of the store fails its CRC and is not used, which resends, never
// skips. Where the file cannot be mapped, or the mapping faults (the file
// cut short under it), it writes with pwrite.
type PeerNotes struct {
	f   *os.File
	m   []byte // the file's first peerMarkSize bytes, mapped shared; nil: pwrite
	buf [peerMarkSize]byte
}

// OpenPeerNotes opens (or creates) the PeerFile in the spool directory dir.
func OpenPeerNotes(dir string) (*PeerNotes, error) {
	f, err := wal.OpenFile(dir, PeerFile, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", PeerFile, err)
	}
	return &PeerNotes{f: f, m: mapNote(f)}, nil
}

// Write replaces the note with m.
func (p *PeerNotes) Write(m PeerMark) error {
	b := append(p.buf[:0], peerMarkVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(m.Pid))
	for _, v := range []uint64{m.Start, m.Stack, m.Ino, m.Through} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if p.m != nil && p.store(b) {
		return nil
	}
	_, err := p.f.WriteAt(b, 0)
	return err
}

// store copies b into the mapping. It returns false if that faulted, and
// the mapping is not used again.
func (p *PeerNotes) store(b []byte) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			unmapNote(p.m)
			p.m, ok = nil, false
		}
	}()
	copy(p.m, b)
	return true
}

// Clear removes the note: nothing is known written to a live receiver.
func (p *PeerNotes) Clear() error { return p.Write(PeerMark{}) }

// Close closes the file.
func (p *PeerNotes) Close() error {
	if p.m != nil {
		unmapNote(p.m)
		p.m = nil
	}
	return p.f.Close()
}

// errPeerMark is a note that cannot be used.
var errPeerMark = errors.New("ledger: no usable receiver note")

// ReadPeerMark returns the note in dir; an error if it is missing or damaged.
func ReadPeerMark(dir string) (PeerMark, error) {
	b, err := wal.ReadFile(dir, PeerFile)
	if err != nil {
		return PeerMark{}, err
	}
	if len(b) < peerMarkSize || b[0] != peerMarkVersion ||
		crc32.Checksum(b[:peerMarkSize-4], castagnoli) != binary.BigEndian.Uint32(b[peerMarkSize-4:]) {
		return PeerMark{}, errPeerMark
	}
	b = b[1:]
	m := PeerMark{Pid: int32(binary.BigEndian.Uint32(b))}
	for i, v := range []*uint64{&m.Start, &m.Stack, &m.Ino, &m.Through} {
		*v = binary.BigEndian.Uint64(b[4+8*i:])
	}
	// Through 0: the receiver end is known, nothing written to it yet.
	if m.Pid < 0 || m.Ino == 0 {
		return PeerMark{}, errPeerMark
	}
	return m, nil
}
