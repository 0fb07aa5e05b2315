package wal

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// encodeRecordV1 writes a record as an earlier evspool did (migrate.go), for
// the tests that show such records are still read.
func encodeRecordV1(key []byte, unixNano int64, data []byte) []byte {
	v := make([]byte, recordHeaderV1+len(data))
	binary.BigEndian.PutUint64(v[4:12], uint64(unixNano))
	copy(v[recordHeaderV1:], data)
	binary.BigEndian.PutUint32(v[0:4], recordSum(key, v[4:]))
	return v
}

// recordSum is a version 1 record's checksum.
func recordSum(key, rest []byte) uint32 { return keySum(key, rest) }

// decodeRecord checks a record (version 1 or 2) and returns its wall-clock
// timestamp and event bytes.
func decodeRecord(key, v []byte) (unixNano int64, data []byte, err error) {
	at, data, err := decodeStamped(key, v)
	return at.wall, data, err
}

// recordDataLen is the length of the event bytes in a checked record.
func recordDataLen(v []byte) int {
	if isV2(v) {
		return len(v) - recordHeader
	}
	return len(v) - recordHeaderV1
}

// frameSize is the size of the value holding events as one frame.
func frameSize(events [][]byte) int { return valueSize(events) }

// encodeRecord returns the stored form of an event (version 2).
func encodeRecord(key []byte, at stamp, data []byte) []byte {
	return encodeValue(make([]byte, recordHeader+len(data)), key, at, [][]byte{data})
}

// encodeFrameInto encodes events (two or more) as a frame into v.
func encodeFrameInto(v, key []byte, at stamp, events [][]byte) []byte {
	return encodeValue(v, key, at, events)
}

// getMetaUint reads key's uint64 from the meta bucket: ok is false when absent or failing its check.
func getMetaUint(b *bolt.Bucket, key []byte) (uint64, bool, error) {
	v := b.Get(key)
	if v == nil {
		return 0, false, nil
	}
	n, err := metaUint(key, v)
	return n, err == nil, err
}
