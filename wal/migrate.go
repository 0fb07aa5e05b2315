package wal

import (
	"encoding/binary"
	"fmt"
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
