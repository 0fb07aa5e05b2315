package boltfile

import (
	"bytes"
	"testing"
)

// FuzzScanPages: the salvage page parser never panics whatever it reads, and
// every pair it reports lies inside the input.
func FuzzScanPages(f *testing.F) {
	f.Add(make([]byte, 4096))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xff}, 100))
	f.Fuzz(func(t *testing.T, buf []byte) {
		var sum byte
		touch := func(k, v []byte) {
			// Touch every byte: a slice past the input would fault here.
			for _, b := range k {
				sum += b
			}
			for _, b := range v {
				sum += b
			}
		}
		parseLeaf(buf, 0, touch)
		if err := Scan(bytes.NewReader(buf), int64(len(buf)), 4096, touch); err != nil {
			t.Fatalf("Scan: %v", err)
		}
		InForceRoot(bytes.NewReader(buf), int64(len(buf)), touch)
		_ = sum
	})
}
