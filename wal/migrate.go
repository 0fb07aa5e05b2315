package wal

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// What earlier evspools wrote, read here and nowhere else. The first Open
// rewrites an earlier meta bucket in today's format (records stay as they
// are); the marks file is rewritten at its next write; files that no
// evspool reads any more are removed (obsoleteFiles).

// obsoleteFiles are what earlier evspools kept beside the spool and none
// reads now: "receiver" held a note of the process reading the last
// connection, which proved nothing handled. Open removes them (removeLeftovers).
var obsoleteFiles = []string{"receiver"}

// A version 1 record (record.go has today's versions):
//
//	crc32c(key | what follows) (4) | wall unix ns (8) | event bytes
//
// Its checksum covers no version byte: it is mistaken for another version
// only by a 32-bit checksum collision.
const recordHeaderV1 = 12

// decodeRecordV1 checks a version 1 record: decodeStamped's fallback.
func decodeRecordV1(key, v []byte) (stamp, []byte, error) {
	if len(v) < recordHeaderV1 {
		return stamp{}, nil, errShortRecord
	}
	if binary.BigEndian.Uint32(v[0:4]) != keySum(key, v[4:]) {
		return stamp{}, nil, errBadChecksum
	}
	return stamp{wall: int64(binary.BigEndian.Uint64(v[4:12]))}, v[recordHeaderV1:], nil
}

// Meta formats before today's (formatVersion, meta.go).
const (
	// bareFormat 1: bare 8-byte values, no checksum.
	bareFormat = 1
	// framelessFormat 2: no frames. Open marks it format 3 before storing
	// anything, so an evspool of format 2 refuses the file.
	framelessFormat = 2
)

// decodeOlder recognises by its format_version value v a meta bucket an
// earlier evspool wrote, and reads it as decode does; older is false for
// any other.
func (m *meta) decodeOlder(v []byte, get func([]byte) []byte, each metaWalk) (older bool, err error) {
	if len(v) == 8 && binary.BigEndian.Uint64(v) == bareFormat {
		for _, f := range m.fields() {
			v := get(f.key)
			if v == nil {
				continue
			}
			if len(v) != 8 {
				return true, fmt.Errorf("meta value %q of %d bytes (format 1 stores 8)", f.key, len(v))
			}
			*f.val = binary.BigEndian.Uint64(v)
		}
		m.nextSeq = max(m.nextSeq, 1)
		return true, nil
	}
	if n, err := metaUint(keyFormat, v); err == nil && n == framelessFormat {
		return true, m.decodeValues(get, each)
	}
	return false, nil
}

// olderMarks returns the payload of a marks file an earlier evspool wrote,
// nil if buf holds none: today's payload, its checksum without the key
// (28 bytes); before that reserved | removed | crc32c, 20 bytes, no flags.
func olderMarks(buf []byte) []byte {
	for _, n := range []int{24, 16} {
		if len(buf) >= n+metaSumSize && binary.BigEndian.Uint32(buf[n:]) == keySum(nil, buf[:n]) {
			return buf[:n]
		}
	}
	return nil
}

// The evspool before this one named only the newest hole (holes.go), under
// two keys of format 3. A salvage reads them as one hole; Open lists that
// hole as today's are, if the removal mark has not passed it, and deletes
// the two keys (tidyHoles), so that a file holds them only until an Open.
var (
	keyHoleFirstV3 = []byte("dropped_hole_first")
	keyHoleLastV3  = []byte("dropped_hole_last")
)

// legacyHole returns the hole the two keys name through get; zero if
// either is absent, an error if either fails its check.
func legacyHole(get func([]byte) []byte) (SeqRange, error) {
	fv, lv := get(keyHoleFirstV3), get(keyHoleLastV3)
	if fv == nil || lv == nil {
		return SeqRange{}, nil
	}
	first, err := metaUint(keyHoleFirstV3, fv)
	if err != nil {
		return SeqRange{}, err
	}
	last, err := metaUint(keyHoleLastV3, lv)
	if err != nil || first == 0 || last < first {
		// Written together, but a salvage keeps the largest copy of each:
		// two copies from different commits name no hole.
		return SeqRange{}, err
	}
	return SeqRange{first, last}, nil
}

// tidyHoles, at Open, lists the hole the two keys name, deletes them, and
// deletes the holes the removal mark has passed (an earlier evspool takes
// today's keys for its user's values and leaves them).
func tidyHoles(mb *bolt.Bucket, removed uint64, path string) error {
	h, err := legacyHole(mb.Get)
	if err != nil {
		return &CorruptionError{Path: path, Err: err}
	}
	if h.Last > removed {
		if err := listHole(mb, h, path); err != nil {
			return err
		}
	}
	if err := deleteKeys(mb, keyHoleFirstV3, keyHoleLastV3); err != nil {
		return err
	}
	return pruneHoles(mb, removed, path)
}
