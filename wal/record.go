package wal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
)

// A record is the value stored under an event's key:
//
//	crc32c (4 bytes, big-endian) | unix nanoseconds (8 bytes, big-endian) | event bytes
//
// The checksum covers the 8-byte key, the timestamp and the event bytes, so a
// record moved under another key is caught as surely as a flipped bit.
const (
	keySize      = 8
	recordHeader = 12
	// entryOverhead is what an entry takes in a bbolt leaf page beyond the
	// event bytes: the leaf element header (16), the key and the record header.
	entryOverhead = 16 + keySize + recordHeader
)

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

// encodeRecord returns the stored form of an event.
func encodeRecord(key []byte, unixNano int64, data []byte) []byte {
	return encodeRecordInto(make([]byte, recordHeader+len(data)), key, unixNano, data)
}

// encodeRecordInto encodes into v, which is recordHeader+len(data) long.
func encodeRecordInto(v, key []byte, unixNano int64, data []byte) []byte {
	binary.BigEndian.PutUint64(v[4:12], uint64(unixNano))
	copy(v[recordHeader:], data)
	binary.BigEndian.PutUint32(v[0:4], recordSum(key, v[4:]))
	return v
}

// decodeRecord checks a stored record and returns its timestamp and event
// bytes. The returned slice aliases v.
func decodeRecord(key, v []byte) (unixNano int64, data []byte, err error) {
	if len(key) != keySize {
		return 0, nil, errBadKey
	}
	if len(v) < recordHeader {
		return 0, nil, errShortRecord
	}
	if binary.BigEndian.Uint32(v[0:4]) != recordSum(key, v[4:]) {
		return 0, nil, errBadChecksum
	}
	return int64(binary.BigEndian.Uint64(v[4:12])), v[recordHeader:], nil
}

func recordSum(key, rest []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, rest)
}
