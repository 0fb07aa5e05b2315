package wal

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"
)

// FuzzDecodeRecord: decoding arbitrary bytes never panics, a record that
// decodes re-encodes to the same bytes (in its own version), and encoding
// then decoding gives back the event and its stamp, in both versions.
func FuzzDecodeRecord(f *testing.F) {
	key := seqKey(42)
	ev := []byte("ptp4l[365195.391]: master offset -1 s2 freq -3972")
	f.Add(key, encodeRecord(key, stamp{1700000000123456789, 3600e9}, ev), int64(5), int64(7), []byte("x"))
	f.Add(key, encodeRecordV1(key, 1700000000123456789, ev), int64(5), int64(0), []byte("x"))
	f.Add(key, encodeRecord(key, stamp{}, nil), int64(-1), int64(-1), []byte{})
	f.Add([]byte("short"), []byte{1, 2, 3}, int64(0), int64(0), []byte("\x00\r\xff"))
	f.Fuzz(func(t *testing.T, k, v []byte, ts, boot int64, data []byte) {
		if at, gotData, err := decodeStamped(k, v); err == nil {
			again := encodeRecordV1(k, at.wall, gotData)
			if isV2(v) && len(v)-len(gotData) == recordHeader {
				again = encodeRecord(k, at, gotData)
			}
			if !bytes.Equal(again, v) {
				t.Fatalf("record %x under key %x decodes but does not re-encode the same", v, k)
			}
		}
		if len(k) != keySize {
			return
		}
		ts = max(min(ts, 1<<62-1), -1<<62) // what a version 2 record holds
		rec := encodeRecord(k, stamp{ts, boot}, data)
		at, gotData, err := decodeStamped(k, rec)
		if err != nil || at != (stamp{ts, boot}) || !bytes.Equal(gotData, data) || recordDataLen(rec) != len(data) {
			t.Fatalf("round trip of %q at %d/%d: got %q at %+v, %v", data, ts, boot, gotData, at, err)
		}
		if ts >= 0 { // records of earlier versions are still read
			old := encodeRecordV1(k, ts, data)
			at, gotData, err := decodeStamped(k, old)
			if err != nil || at != (stamp{wall: ts}) || !bytes.Equal(gotData, data) || recordDataLen(old) != len(data) {
				t.Fatalf("version 1 record of %q at %d: got %q at %+v, %v", data, ts, gotData, at, err)
			}
		}
		// The checksum covers the key: the record under another key fails.
		other := bytes.Clone(k)
		other[7] ^= 1
		if _, _, err := decodeRecord(other, rec); err == nil {
			t.Fatalf("record accepted under key %x", other)
		}
		if len(rec) > recordHeader {
			bad := bytes.Clone(rec)
			bad[len(bad)-1] ^= 0x80
			if _, _, err := decodeRecord(k, bad); err == nil {
				t.Fatalf("flipped bit not caught")
			}
		}
	})
}

// FuzzDecodeValue: decoding arbitrary bytes as a value (a record or a
// frame) never panics, and what decodes holds together: its events' bytes
// lie inside the value, a frame's add up to it and re-encode to the same
// bytes. A frame made of the fuzzer's events decodes back to them, under
// its key only, and a flipped bit anywhere in it is caught.
func FuzzDecodeValue(f *testing.F) {
	key := seqKey(42)
	evs := [][]byte{[]byte("ptp4l[365195.391]: master offset -1 s2 freq -3972"), {}, []byte("phc2sys")}
	f.Add(key, encodeFrameInto(make([]byte, frameSize(evs)), key, stamp{1700000000123456789, 3600e9}, evs), []byte("a\x00bc\xffd"), int64(5), int64(7))
	f.Add(key, encodeRecord(key, stamp{1, 2}, evs[0]), []byte("x"), int64(-1), int64(0))
	f.Add([]byte("short"), []byte{1, 2, 3}, []byte{}, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, k, v, data []byte, ts, boot int64) {
		if val, err := decodeValue(k, v); err == nil {
			var got [][]byte
			val.each(0, func(seq uint64, e []byte) bool {
				if seq != val.first+uint64(len(got)) {
					t.Fatalf("event %d numbered %d", len(got), seq)
				}
				got = append(got, e)
				return true
			})
			if len(got) != val.n {
				t.Fatalf("%d events of %d", len(got), val.n)
			}
			if val.n > 1 {
				again := encodeFrameInto(make([]byte, frameSize(got)), k, val.at, got)
				if !bytes.Equal(again, v) {
					t.Fatalf("frame %x decodes but does not re-encode the same", v)
				}
			}
		}
		if len(k) != keySize {
			return
		}
		// The fuzzer's events: data cut where it has a 0 byte.
		events := bytes.Split(data, []byte{0})
		if len(events) < 2 {
			events = append(events, []byte("second"))
		}
		if binary.BigEndian.Uint64(k) > math.MaxUint64-uint64(len(events)) {
			return // its events would be numbered past 2^64: never written, refused by decodeValue
		}
		ts = max(min(ts, 1<<62-1), -1<<62)
		at := stamp{ts, max(boot, 0)}
		fr := encodeFrameInto(make([]byte, frameSize(events)), k, at, events)
		val, err := decodeValue(k, fr)
		if err != nil || val.n != len(events) || val.at != at || val.first != binary.BigEndian.Uint64(k) {
			t.Fatalf("frame of %q at %+v: %+v, %v", events, at, val, err)
		}
		i := 0
		val.each(0, func(_ uint64, e []byte) bool {
			if !bytes.Equal(e, events[i]) {
				t.Fatalf("event %d: %q, want %q", i, e, events[i])
			}
			i++
			return true
		})
		if val.cost() != entryCost(len(fr)-recordHeader) {
			t.Fatalf("frame's cost %d, not that of its %d bytes", val.cost(), len(fr)-recordHeader)
		}
		other := bytes.Clone(k)
		other[7] ^= 1
		if _, err := decodeValue(other, fr); err == nil {
			t.Fatalf("frame accepted under key %x", other)
		}
		bit := int(uint64(ts) % uint64(len(fr)*8))
		bad := bytes.Clone(fr)
		bad[bit/8] ^= 1 << (bit % 8)
		if val, err := decodeValue(k, bad); err == nil {
			t.Fatalf("flipped bit %d of %d not caught: %+v", bit, len(fr)*8, val)
		}
	})
}
