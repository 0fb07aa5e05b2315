package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// Every value the spool keeps about itself goes through one codec: in the
// meta bucket of spool.db and in the marks file alike, a value is stored as
//
//	payload | crc32c(key | payload) (4 bytes, big-endian)
//
// so a flipped bit anywhere in it (or a value moved under another key) is
// caught, and a value that fails its check is damage: never trusted, never
// compared with other copies. The payload is any bytes: a uint64 is 8 bytes
// big-endian (putMetaUint, getMetaUint). A value added to the meta bucket
// goes through putMeta and getMeta, and load checks every value in the
// bucket, known or not.
const metaSumSize = 4

var errMetaSum = errors.New("checksum mismatch")

// encodeMeta returns the stored form of payload under key.
func encodeMeta(key, payload []byte) []byte {
	v := make([]byte, len(payload)+metaSumSize)
	copy(v, payload)
	binary.BigEndian.PutUint32(v[len(payload):], metaSum(key, payload))
	return v
}

// decodeMeta checks the stored value v of key and returns its payload (an
// alias of v).
func decodeMeta(key, v []byte) ([]byte, error) {
	if len(v) < metaSumSize {
		return nil, fmt.Errorf("meta value %q of %d bytes: shorter than its checksum", key, len(v))
	}
	p := v[:len(v)-metaSumSize]
	if binary.BigEndian.Uint32(v[len(p):]) != metaSum(key, p) {
		return nil, fmt.Errorf("meta value %q: %w", key, errMetaSum)
	}
	return p, nil
}

func metaSum(key, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, payload)
}

// putMeta stores payload under key in the meta bucket, checksummed.
func putMeta(b *bolt.Bucket, key, payload []byte) error {
	return b.Put(key, encodeMeta(key, payload))
}

// getMeta returns key's payload from the meta bucket: ok is false when the
// key is absent; a value that fails its check is a *CorruptionError-worthy
// error (the caller names the file).
func getMeta(b *bolt.Bucket, key []byte) (payload []byte, ok bool, err error) {
	v := b.Get(key)
	if v == nil {
		return nil, false, nil
	}
	p, err := decodeMeta(key, v)
	return p, err == nil, err
}

func putMetaUint(b *bolt.Bucket, key []byte, n uint64) error {
	p := make([]byte, 8)
	binary.BigEndian.PutUint64(p, n)
	return putMeta(b, key, p)
}

// getMetaUint is getMeta for a uint64.
func getMetaUint(b *bolt.Bucket, key []byte) (uint64, bool, error) {
	p, ok, err := getMeta(b, key)
	if err != nil || !ok {
		return 0, false, err
	}
	if len(p) != 8 {
		return 0, false, fmt.Errorf("meta value %q holds %d bytes, not 8", key, len(p))
	}
	return binary.BigEndian.Uint64(p), true, nil
}
