package wal

import (
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFormatsBytes pins the stored bytes of every checksummed format to what
// an evspool of today's format wrote, and reads each back: a change to the
// shared checksum (keySum) or to a layout fails here.
func TestFormatsBytes(t *testing.T) {
	k := seqKey(0x0102030405060708)
	at := stamp{1700000000123456789, 3600e9}
	evs := [][]byte{[]byte("ab"), {}, []byte("cde")}
	marks := make([]byte, 24)
	binary.BigEndian.PutUint64(marks[0:], 70000)
	binary.BigEndian.PutUint64(marks[8:], 12)
	binary.BigEndian.PutUint64(marks[16:], 1)
	for _, tc := range []struct {
		name, want string
		got        []byte
	}{
		{"record v2", "17cd294297979cfe3d85cd150000034630b8a0006576656e74", encodeRecord(k, at, []byte("event"))},
		{"record v1", "cba9b57f17979cfe3d85cd156576656e74", encodeRecordV1(k, at.wall, []byte("event"))},
		{"frame", "3046a07697979cfe3d85cd158000034630b8a000030200036162636465", encodeFrameInto(make([]byte, frameSize(evs)), k, at, evs)},
		{"meta value", "000000000000012cf89bf9a9", encodeMeta(keyNextSeq, binary.BigEndian.AppendUint64(nil, 300))},
		{"marks", "0000000000011170000000000000000c0000000000000001e32713f8", encodeMeta(keyMarks, marks)},
		{"ack slot", "000000000000000c38b8fe61", encodeMeta(keyAcked, binary.BigEndian.AppendUint64(nil, 12))},
	} {
		require.Equal(t, tc.want, hex.EncodeToString(tc.got), tc.name)
	}

	val, err := decodeValue(k, must(hex.DecodeString("3046a07697979cfe3d85cd158000034630b8a000030200036162636465")))
	require.NoError(t, err)
	require.Equal(t, 3, val.n)
	require.Equal(t, at, val.at)
	for name, s := range map[string]string{"v1": "cba9b57f17979cfe3d85cd156576656e74", "v2": "17cd294297979cfe3d85cd150000034630b8a0006576656e74"} {
		val, err := decodeValue(k, must(hex.DecodeString(s)))
		require.NoError(t, err, name)
		require.Equal(t, "event", string(val.data), name)
		require.Equal(t, at.wall, val.at.wall, name)
	}
	n, err := metaUint(keyNextSeq, must(hex.DecodeString("000000000000012cf89bf9a9")))
	require.NoError(t, err)
	require.EqualValues(t, 300, n)
}

// TestMarksFormats: the marks file of today and of earlier evspools is read;
// anything else that is not zeros is damage.
func TestMarksFormats(t *testing.T) {
	three := make([]byte, 24)
	binary.BigEndian.PutUint64(three[0:], 70000)
	binary.BigEndian.PutUint64(three[8:], 12)
	binary.BigEndian.PutUint64(three[16:], 1)
	crc := func(b []byte) []byte {
		return binary.BigEndian.AppendUint32(append([]byte(nil), b...), crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	}
	flipped := encodeMeta(keyMarks, three)
	flipped[3] ^= 1
	// withSlots is a 64-byte file: buf's numbers, then the ack slots
	// holding a and b (0: never written).
	withSlots := func(buf []byte, a, b uint64) []byte {
		f := make([]byte, marksFileSize)
		copy(f, buf)
		for i, n := range []uint64{a, b} {
			if n > 0 {
				copy(f[ackSlotOff(i):], encodeMeta(keyAcked, binary.BigEndian.AppendUint64(nil, n)))
			}
		}
		return f
	}
	tornSecond := withSlots(encodeMeta(keyMarks, three), 15, 20)
	tornSecond[ackSlotOff(1)+5] ^= 0x40
	for _, tc := range []struct {
		name              string
		buf               []byte
		reserved, removed uint64
		exact, damaged    bool
	}{
		{"today's", encodeMeta(keyMarks, three), 70000, 12, true, false},
		{"ack slots, the larger counts", withSlots(encodeMeta(keyMarks, three), 20, 15), 70000, 20, true, false},
		{"ack slots, the second torn", tornSecond, 70000, 15, true, false},
		{"ack slots below the numbers' removed", withSlots(encodeMeta(keyMarks, three), 5, 0), 70000, 12, true, false},
		{"ack slot beside damaged numbers", withSlots(flipped, 0, 30), 0, 30, false, true},
		{"checksum without the key", crc(three), 70000, 12, true, false},
		{"20 bytes, no flags", crc(three[:16]), 70000, 12, false, false},
		{"a flipped bit", flipped, 0, 0, false, true},
		{"zeros", make([]byte, marksSize), 0, 0, false, false},
		{"empty", nil, 0, 0, false, false},
	} {
		var m marks
		m.parse(tc.buf)
		require.Equal(t, [4]any{tc.reserved, tc.removed, tc.exact, tc.damaged}, [4]any{m.reserved, m.removed, m.exact, m.damaged}, tc.name)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
