package wal

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Holes. Drop-oldest keeps what Read handed out and drops the oldest values
// after it (dropAfter), so dropped numbers can lie past the removal mark,
// among numbers still pending: a hole. The meta bucket lists every hole the
// mark has not passed, one key each,
//
//	holePrefix | first (8, big-endian)  ->  last (8), through the meta codec
//
// so that a salvage neither brings their events back from free pages nor
// counts them unreadable: they were counted dropped. A drop lists what it
// dropped joined with the holes it touches or adjoins (listHole); the
// commit that moves the mark past a hole's last deletes it (pruneHoles).
//
// The holes listed are disjoint and never adjoin, so between two lies a
// number neither dropped nor removed: a value still in the file. They
// number at most one more than the values past the mark (the budget's
// worth and what Read handed out), however far a caller reads ahead without
// acknowledging. No cap is needed: a drop puts one key and deletes those of
// the holes it joins, and a removal deletes at most one hole more than the
// values it deletes (between two holes it passes lies a value it deletes),
// so the list never costs a commit more than the values it drops or
// deletes.
var holePrefix = []byte("\x00hole:")

// holeKey is the meta key of the hole that starts at first.
func holeKey(first uint64) []byte {
	return binary.BigEndian.AppendUint64(append(make([]byte, 0, len(holePrefix)+8), holePrefix...), first)
}

// isHoleName tells the keys under holePrefix, which no user value may take.
func isHoleName(k []byte) bool { return bytes.HasPrefix(k, holePrefix) }

// decodeHole checks a hole's key and stored value.
func decodeHole(k, v []byte) (SeqRange, error) {
	if len(k) != len(holePrefix)+8 {
		return SeqRange{}, fmt.Errorf("meta key %q: not a hole's (%d bytes)", k, len(k))
	}
	last, err := metaUint(k, v)
	if err != nil {
		return SeqRange{}, err
	}
	h := SeqRange{First: binary.BigEndian.Uint64(k[len(holePrefix):]), Last: last}
	if h.First == 0 || h.Last < h.First {
		return SeqRange{}, fmt.Errorf("meta value %q: hole %d-%d", k, h.First, h.Last)
	}
	return h, nil
}

// listHole lists h, just dropped, in mb, the meta bucket of the spool file
// path: joined with the hole before it if that one reaches h or adjoins it,
// and with those it covers or adjoins after (a drop past values Read no
// longer holds, after a restart, sweeps across holes).
func listHole(mb *bolt.Bucket, h SeqRange, path string) error {
	c := mb.Cursor()
	k, _ := c.Seek(holeKey(h.First))
	var v []byte
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if !isHoleName(k) {
		k, v = c.Seek(holeKey(h.First)) // no hole before h
	}
	var joined [][]byte
	for ; isHoleName(k); k, v = c.Next() {
		n, err := decodeHole(k, v)
		if err != nil {
			return &CorruptionError{Path: path, Err: err}
		}
		if n.First > h.Last+1 {
			break
		}
		if n.Last+1 < h.First {
			continue // the hole before, apart from h
		}
		if n.First < h.First {
			h.First = n.First
		} else if n.First > h.First {
			joined = append(joined, bytes.Clone(k))
		}
		h.Last = max(h.Last, n.Last)
	}
	if err := deleteKeys(mb, joined...); err != nil {
		return err
	}
	return putMetaUint(mb, holeKey(h.First), h.Last)
}

// pruneHoles deletes the holes of mb, the meta bucket of the spool file
// path, that end at or before removed. In key order their ends rise: it
// stops at the first that ends past removed.
func pruneHoles(mb *bolt.Bucket, removed uint64, path string) error {
	var gone [][]byte
	c := mb.Cursor()
	for k, v := c.Seek(holePrefix); isHoleName(k); k, v = c.Next() {
		h, err := decodeHole(k, v)
		if err != nil {
			return &CorruptionError{Path: path, Err: err}
		}
		if h.Last > removed {
			break
		}
		gone = append(gone, bytes.Clone(k))
	}
	return deleteKeys(mb, gone...)
}

// putHoles lists holes in mb.
func putHoles(mb *bolt.Bucket, holes []SeqRange) error {
	for _, h := range holes {
		if err := putMetaUint(mb, holeKey(h.First), h.Last); err != nil {
			return err
		}
	}
	return nil
}

// holesIn returns the holes listed among a meta bucket's values, keyed as
// stored, and the one an earlier evspool named (legacyHole). A value that
// fails its check is an error.
func holesIn(values map[string][]byte) ([]SeqRange, error) {
	var holes []SeqRange
	for k, v := range values {
		if !isHoleName([]byte(k)) {
			continue
		}
		h, err := decodeHole([]byte(k), v)
		if err != nil {
			return nil, err
		}
		holes = append(holes, h)
	}
	h, err := legacyHole(func(k []byte) []byte { return values[string(k)] })
	if err != nil {
		return nil, err
	}
	if h.Last != 0 {
		holes = append(holes, h)
	}
	return holes, nil
}

// holeSet is holes sorted, overlapping or adjoining ones merged.
type holeSet []SeqRange

// pastMark returns the parts of holes after removed, as a holeSet.
func pastMark(holes []SeqRange, removed uint64) holeSet {
	var s holeSet
	for _, h := range holes {
		if h.Last > removed {
			s = append(s, SeqRange{max(h.First, removed+1), h.Last})
		}
	}
	slices.SortFunc(s, func(a, b SeqRange) int { return cmp.Compare(a.First, b.First) })
	out := s[:0]
	for _, h := range s {
		if n := len(out); n > 0 && h.First <= out[n-1].Last+1 {
			out[n-1].Last = max(out[n-1].Last, h.Last)
			continue
		}
		out = append(out, h)
	}
	return out
}

// has tells whether seq is in a hole.
func (s holeSet) has(seq uint64) bool {
	i, _ := slices.BinarySearchFunc(s, seq, func(h SeqRange, seq uint64) int {
		return cmp.Compare(h.Last, seq)
	})
	return i < len(s) && s[i].First <= seq
}

// addTo adds to seen the numbers in the holes below end and returns their
// count.
func (s holeSet) addTo(seen map[uint64]struct{}, end uint64) (n uint64) {
	for _, h := range s {
		for seq := h.First; seq <= h.Last && seq < end; seq++ {
			seen[seq] = struct{}{}
			n++
		}
	}
	return n
}
