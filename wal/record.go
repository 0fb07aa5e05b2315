package wal

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"os"

	"github.com/evspool/evspool/internal/boltfile"
)

// A record is the value stored under an event's key (docs/spool.md,
// "On-disk layout"). Version 2:
//
//	crc32c (4) | wall unix ns, bit 63 set (8) | CLOCK_BOOTTIME ns (8) | event bytes
//
// Version 3, a frame, holds two or more events of one commit (see below):
//
//	crc32c (4) | wall unix ns, bit 63 set (8) | CLOCK_BOOTTIME ns, bit 63 set (8) |
//	count uvarint (>= 2) | count lengths, uvarint each | the events' bytes
//
// Its key is its first event's sequence number; bit 63 of the boot time
// tells a frame. Integers are big-endian. The checksum (keySum) also covers
// the key and an unstored version byte, so a record moved to another key or
// read as another version fails it. Version 1: migrate.go.
const (
	keySize       = 8
	recordHeader  = 20                                             // the header of the records written now
	entryOverhead = boltfile.LeafElemSize + keySize + recordHeader // an element beside its event
	v2Flag        = uint64(1) << 63
)

// stamp is when a record was appended.
type stamp struct {
	wall int64 // unix nanoseconds
	boot int64 // CLOCK_BOOTTIME nanoseconds; 0: not recorded
}

// costPage is bbolt's page size: the OS page size, which bbolt uses by default.
var costPage = int64(os.Getpagesize())

// entryCost is what an event of n bytes costs against the spool's budget:
// its share of the leaf pages it occupies. bbolt never splits a leaf element
// across pages, so when k elements fit in a page each costs a kth of it; a
// larger element takes whole pages of its own.
func entryCost(n int) int64 {
	e := int64(n) + entryOverhead
	if room := costPage - boltfile.PageHeaderSize; e <= room {
		k := room / e
		return (costPage + k - 1) / k
	}
	return (e + boltfile.PageHeaderSize + costPage - 1) / costPage * costPage
}

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

// encodeValue encodes events into v, valueSize(events) long: a lone event
// as a version 2 record, more as a frame.
func encodeValue(v, key []byte, at stamp, events [][]byte) []byte {
	wall := max(min(at.wall, 1<<62-1), -1<<62) // what 63 bits hold
	binary.BigEndian.PutUint64(v[4:12], uint64(wall)|v2Flag)
	tag, boot, o := v2Tag, uint64(at.boot), recordHeader
	if len(events) > 1 {
		tag, boot = v3Tag, uint64(max(at.boot, 0))|v2Flag
		o += binary.PutUvarint(v[o:], uint64(len(events)))
		for _, e := range events {
			o += binary.PutUvarint(v[o:], uint64(len(e)))
		}
	}
	binary.BigEndian.PutUint64(v[12:20], boot)
	for _, e := range events {
		o += copy(v[o:], e)
	}
	binary.BigEndian.PutUint32(v[0:4], keySum(key, tag, v[4:]))
	return v
}

// valueSize is the size of events stored as one value (see encodeValue).
func valueSize(events [][]byte) int {
	if len(events) == 1 {
		return recordHeader + len(events[0])
	}
	n := frameHead(len(events))
	for _, e := range events {
		n += uvarintLen(uint64(len(e))) + len(e)
	}
	return n
}

// decodeStamped checks a record (not a frame); its bytes alias v.
func decodeStamped(key, v []byte) (stamp, []byte, error) {
	if len(key) != keySize {
		return stamp{}, nil, errBadKey
	}
	if isV2(v) && binary.BigEndian.Uint32(v[0:4]) == keySum(key, v2Tag, v[4:]) {
		wall := int64(binary.BigEndian.Uint64(v[4:12])<<1) >> 1 // sign-extend 63 bits
		return stamp{wall: wall, boot: int64(binary.BigEndian.Uint64(v[12:20]))}, v[recordHeader:], nil
	}
	return decodeRecordV1(key, v)
}

// isV2 tells by its flag bit whether v looks like a version 2 record.
func isV2(v []byte) bool {
	return len(v) >= recordHeader && binary.BigEndian.Uint64(v[4:12])&v2Flag != 0
}

// v2Tag and v3Tag are the versions a record's checksum covers.
var v2Tag, v3Tag = []byte{2}, []byte{3}

// isFrame tells by its flag bits whether v looks like a version 3 record.
func isFrame(v []byte) bool {
	return isV2(v) && binary.BigEndian.Uint64(v[12:20])&v2Flag != 0
}

var errBadFrame = errors.New("frame lengths do not add up to its bytes")

// A frame takes at most half a page's room, so two fill a leaf; a lone or
// too large event is stored as version 2. A frame leaves the file whole once
// its last event is removed; the removal mark hides its earlier events. Append
// prices events as records; a frame may cost up to a quarter page more, which
// the budget leaves room for.

// frameRoom is the most bytes a frame's value may take.
var frameRoom = int((costPage-boltfile.PageHeaderSize)/2) - boltfile.LeafElemSize - keySize

// frameHead is a frame's fixed header and the count for n events.
func frameHead(n int) int { return recordHeader + uvarintLen(uint64(n)) }

// uvarintLen is the size of x as a uvarint: 7 bits a byte.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// frameGrow is a frame's size once an event of l bytes joins its n events.
func frameGrow(size, n, l int) int {
	if n == 0 {
		return frameHead(1) + uvarintLen(uint64(l)) + l
	}
	return size + uvarintLen(uint64(n+1)) - uvarintLen(uint64(n)) + uvarintLen(uint64(l)) + l
}

// value is a checked record: one event (versions 1 and 2) or a frame.
type value struct {
	first uint64 // the sequence number of its first event: the key
	n     int    // its events
	at    stamp
	lens  []byte // a frame's lengths, uvarint each
	data  []byte // the events' bytes
}

// last is the sequence number of v's last event.
func (v *value) last() uint64 { return v.first + uint64(v.n) - 1 }

// decodeValue checks the value stored under key. Its slices alias v.
func decodeValue(key, v []byte) (value, error) {
	if !isFrame(v) || len(key) != keySize || binary.BigEndian.Uint32(v[0:4]) != keySum(key, v3Tag, v[4:]) {
		// Not a frame (some version 1 records look like one).
		at, data, err := decodeStamped(key, v)
		if err != nil {
			return value{}, err
		}
		return value{first: binary.BigEndian.Uint64(key), n: 1, at: at, data: data}, nil
	}
	rest := v[recordHeader:]
	count, k := binary.Uvarint(rest)
	if k <= 0 || count < 2 || count > uint64(len(rest)) {
		return value{}, errBadFrame
	}
	rest = rest[k:]
	lens := rest
	total := uint64(0)
	for i := uint64(0); i < count; i++ {
		l, k := binary.Uvarint(rest)
		if k <= 0 {
			return value{}, errBadFrame
		}
		rest = rest[k:]
		total += l
	}
	if total != uint64(len(rest)) {
		return value{}, errBadFrame
	}
	first := binary.BigEndian.Uint64(key)
	if first+count-1 < first {
		return value{}, errBadFrame
	}
	return value{
		first: first,
		n:     int(count),
		at: stamp{
			wall: int64(binary.BigEndian.Uint64(v[4:12])<<1) >> 1,
			boot: int64(binary.BigEndian.Uint64(v[12:20]) &^ v2Flag),
		},
		lens: lens[:len(lens)-len(rest)],
		data: rest,
	}, nil
}

// cost is what v costs against the spool's budget, see entryCost.
func (v *value) cost() int64 {
	if v.n == 1 {
		return entryCost(len(v.data))
	}
	return entryCost(uvarintLen(uint64(v.n)) + len(v.lens) + len(v.data))
}

// each calls fn for v's events from from on, until fn returns false.
func (v *value) each(from uint64, fn func(seq uint64, data []byte) bool) {
	if v.n == 1 {
		if v.first >= from {
			fn(v.first, v.data)
		}
		return
	}
	lens, data := v.lens, v.data
	for i := 0; i < v.n; i++ {
		l, k := binary.Uvarint(lens)
		lens = lens[k:]
		e := data[:l:l]
		data = data[l:]
		if seq := v.first + uint64(i); seq >= from && !fn(seq, e) {
			return
		}
	}
}

// span is the count and bytes of v's events in [from, to].
func (v *value) span(from, to uint64) (events, bytes uint64) {
	v.each(from, func(seq uint64, data []byte) bool {
		if seq > to {
			return false
		}
		events++
		bytes += uint64(len(data))
		return true
	})
	return events, bytes
}
