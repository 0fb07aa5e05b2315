package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// Every stored value carries keySum, a CRC-32C over its key and bytes, so a
// flipped bit or a value moved to another key is caught; a value failing it
// is damage, never trusted. Records carry it first; meta values and the
// marks file carry it last, through this codec:
//
//	payload | crc32c(key | payload) (4 bytes, big-endian)
const metaSumSize = 4

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	errMetaSum = errors.New("checksum mismatch")
)

// keySum is the CRC-32C of key and then parts.
func keySum(key []byte, parts ...[]byte) uint32 {
	c := crc32.Checksum(key, castagnoli)
	for _, p := range parts {
		c = crc32.Update(c, castagnoli, p)
	}
	return c
}

// encodeMeta returns the stored form of payload under key.
func encodeMeta(key, payload []byte) []byte {
	v := make([]byte, len(payload)+metaSumSize)
	copy(v, payload)
	return sealMeta(key, v)
}

// sealMeta writes the checksum of key and v's payload (all of v but its
// last metaSumSize bytes) into those bytes, and returns v.
func sealMeta(key, v []byte) []byte {
	p := v[:len(v)-metaSumSize]
	binary.BigEndian.PutUint32(v[len(p):], keySum(key, p))
	return v
}

// decodeMeta checks key's stored value v and returns its payload (aliasing v).
func decodeMeta(key, v []byte) ([]byte, error) {
	if len(v) < metaSumSize {
		return nil, fmt.Errorf("meta value %q of %d bytes: shorter than its checksum", key, len(v))
	}
	p := v[:len(v)-metaSumSize]
	if binary.BigEndian.Uint32(v[len(p):]) != keySum(key, p) {
		return nil, fmt.Errorf("meta value %q: %w", key, errMetaSum)
	}
	return p, nil
}

// metaUint decodes the stored value v of key as a uint64.
func metaUint(key, v []byte) (uint64, error) {
	p, err := decodeMeta(key, v)
	if err != nil {
		return 0, err
	}
	if len(p) != 8 {
		return 0, fmt.Errorf("meta value %q holds %d bytes, not 8", key, len(p))
	}
	return binary.BigEndian.Uint64(p), nil
}

// putMeta stores payload under key in the meta bucket, checksummed.
func putMeta(b *bolt.Bucket, key, payload []byte) error {
	return b.Put(key, encodeMeta(key, payload))
}

// putMetaUint stores n under key as putMeta does, building the stored
// value in place: one allocation.
func putMetaUint(b *bolt.Bucket, key []byte, n uint64) error {
	v := make([]byte, 8+metaSumSize)
	binary.BigEndian.PutUint64(v, n)
	return b.Put(key, sealMeta(key, v))
}
