package wal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
)

// A record is the value stored under an event's key. Version 2, written
// since the boot-clock stamp was added (see bootstamp.go):
//
//	crc32c (4) | wall unix ns, bit 63 set (8) | CLOCK_BOOTTIME ns (8) | event bytes
//
// Version 1, written before and still read:
//
//	crc32c (4) | wall unix ns (8) | event bytes
//
// All integers are big-endian. The checksum covers the 8-byte key and
// everything after the checksum, so a record moved under another key is
// caught as surely as a flipped bit; a version 2 checksum also covers a
// version byte that is not stored, so a version 1 record is read as version
// 2 only if its wall time is negative (before 1970) and a 32-bit checksum
// matches by chance. A version 2 wall time keeps 63 bits: 1824 to 2116.
const (
	keySize        = 8
	recordHeaderV1 = 12
	recordHeader   = 20 // the header of the records written now
	// entryOverhead is what an entry takes in a bbolt leaf page beyond the
	// event bytes: the leaf element header (16), the key and the record header.
	entryOverhead = 16 + keySize + recordHeader
	v2Flag        = uint64(1) << 63
	v2Version     = 2
)

// stamp is when a record was appended: the wall clock, and the boot clock
// (0 in version 1 records, which have none).
type stamp struct {
	wall int64 // unix nanoseconds
	boot int64 // CLOCK_BOOTTIME nanoseconds; 0: not recorded
}

// costPage is bbolt's page size: the OS page size, which bbolt uses by default.
var costPage = int64(os.Getpagesize())

// entryCost is what an event of n bytes costs against the spool's budget:
// its share of the leaf pages it occupies. bbolt never splits a leaf element
// across pages, so when k elements fit in a page each costs a kth of it (a
// 100-byte event costs 137 bytes, a 1000-byte one a third of a page, not
// 1036 bytes); a larger element takes whole pages of its own. Counting the
// bytes alone let entries of a few KiB fill the file a third faster than the
// budget said.
func entryCost(n int) int64 {
	e := int64(n) + entryOverhead
	if room := costPage - pageHeaderSize; e <= room {
		k := room / e
		return (costPage + k - 1) / k
	}
	return (e + pageHeaderSize + costPage - 1) / costPage * costPage
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var (
	errShortRecord = errors.New("record shorter than its header")
	errBadChecksum = errors.New("record checksum mismatch")
	errBadKey      = errors.New("key is not an 8-byte sequence number")
)

func seqKey(seq uint64) []byte {
	k := make([]byte, keySize)
	binary.BigEndian.PutUint64(k, seq)
	return k
}

func keySeq(k []byte) (uint64, error) {
	if len(k) != keySize {
		return 0, errBadKey
	}
	return binary.BigEndian.Uint64(k), nil
}

// encodeRecord returns the stored form of an event (version 2).
func encodeRecord(key []byte, at stamp, data []byte) []byte {
	return encodeRecordInto(make([]byte, recordHeader+len(data)), key, at, data)
}

// encodeRecordInto encodes into v, which is recordHeader+len(data) long.
func encodeRecordInto(v, key []byte, at stamp, data []byte) []byte {
	wall := max(min(at.wall, 1<<62-1), -1<<62) // what 63 bits hold
	binary.BigEndian.PutUint64(v[4:12], uint64(wall)&^v2Flag|v2Flag)
	binary.BigEndian.PutUint64(v[12:20], uint64(at.boot))
	copy(v[recordHeader:], data)
	binary.BigEndian.PutUint32(v[0:4], recordSumV2(key, v[4:]))
	return v
}

// encodeRecordV1 is the record format of earlier versions, kept for the
// tests that show such records are still read.
func encodeRecordV1(key []byte, unixNano int64, data []byte) []byte {
	v := make([]byte, recordHeaderV1+len(data))
	binary.BigEndian.PutUint64(v[4:12], uint64(unixNano))
	copy(v[recordHeaderV1:], data)
	binary.BigEndian.PutUint32(v[0:4], recordSum(key, v[4:]))
	return v
}

// decodeRecord checks a stored record and returns its wall-clock timestamp
// and event bytes. The returned slice aliases v.
func decodeRecord(key, v []byte) (unixNano int64, data []byte, err error) {
	at, data, err := decodeStamped(key, v)
	return at.wall, data, err
}

// decodeStamped is decodeRecord with the whole stamp.
func decodeStamped(key, v []byte) (stamp, []byte, error) {
	if len(key) != keySize {
		return stamp{}, nil, errBadKey
	}
	if len(v) < recordHeaderV1 {
		return stamp{}, nil, errShortRecord
	}
	sum := binary.BigEndian.Uint32(v[0:4])
	if isV2(v) && sum == recordSumV2(key, v[4:]) {
		wall := int64(binary.BigEndian.Uint64(v[4:12])<<1) >> 1 // sign-extend 63 bits
		return stamp{wall: wall, boot: int64(binary.BigEndian.Uint64(v[12:20]))}, v[recordHeader:], nil
	}
	if sum != recordSum(key, v[4:]) {
		return stamp{}, nil, errBadChecksum
	}
	return stamp{wall: int64(binary.BigEndian.Uint64(v[4:12]))}, v[recordHeaderV1:], nil
}

// isV2 tells by its flag bit whether v looks like a version 2 record; only
// the checksum says for sure.
func isV2(v []byte) bool {
	return len(v) >= recordHeader && binary.BigEndian.Uint64(v[4:12])&v2Flag != 0
}

// recordDataLen is the length of the event bytes in a stored record, for
// the accounting of deletions (the record was checked when it was read).
func recordDataLen(v []byte) int {
	if isV2(v) {
		return len(v) - recordHeader
	}
	return len(v) - recordHeaderV1
}

func recordSum(key, rest []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, rest)
}

var v2Tag = []byte{v2Version}

func recordSumV2(key, rest []byte) uint32 {
	c := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, v2Tag)
	return crc32.Update(c, castagnoli, rest)
}
