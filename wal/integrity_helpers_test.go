package wal_test

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// The helpers below find, in a closed spool file (pages of 4096 bytes),
// the bytes the integrity cases damage: the root bucket's leaf in force,
// its elements, and the elements of the inline meta bucket.

const icPage = 4096

// icRootPage returns the offset of the root bucket's page in force: the
// root of the valid meta page with the higher txid.
func icRootPage(t testing.TB, b []byte) int {
	t.Helper()
	le := binary.LittleEndian
	best, txid := -1, uint64(0)
	for _, off := range []int{0, icPage} {
		m := b[off+16:]
		h := fnv.New64a()
		h.Write(m[:56])
		if le.Uint32(m[0:4]) != 0xED0CDAED || le.Uint64(m[56:]) != h.Sum64() {
			continue
		}
		if best < 0 || le.Uint64(m[48:]) > txid {
			best, txid = int(le.Uint64(m[16:24]))*icPage, le.Uint64(m[48:])
		}
	}
	require.GreaterOrEqual(t, best, 0, "no valid meta page")
	return best
}

// icElem is a leaf element: where its 16-byte header, key and value are.
type icElem struct{ hdr, key, val, vsize int }

// icElems lists the elements of the leaf page at off (a page in the file,
// or an inline bucket's page).
func icElems(b []byte, off int) map[string]icElem {
	le := binary.LittleEndian
	out := map[string]icElem{}
	for i := 0; i < int(le.Uint16(b[off+10:])); i++ {
		at := off + 16 + i*16
		k := at + int(le.Uint32(b[at+4:]))
		ks, vs := int(le.Uint32(b[at+8:])), int(le.Uint32(b[at+12:]))
		out[string(b[k:k+ks])] = icElem{hdr: at, key: k, val: k + ks, vsize: vs}
	}
	return out
}

// icMetaElems lists the inline meta bucket's elements in force.
func icMetaElems(t testing.TB, b []byte) map[string]icElem {
	t.Helper()
	root := icElems(b, icRootPage(t, b))
	m, ok := root["meta"]
	require.True(t, ok, "no meta bucket in the root page")
	require.Zero(t, binary.LittleEndian.Uint64(b[m.val:]), "meta bucket not inline")
	return icElems(b, m.val+16)
}

// icDamage reads the file at path, lets damage change it, writes it back.
func icDamage(t testing.TB, path string, damage func(b []byte)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	damage(b)
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

// icStaleCopies returns the offsets of the values of key in the file other
// than the one in force (copies in pages of older transactions).
func icStaleCopies(t testing.TB, b []byte, key string) []int {
	t.Helper()
	live := icMetaElems(t, b)[key].val
	var out []int
	for at := 0; ; {
		i := bytes.Index(b[at:], []byte(key))
		if i < 0 {
			return out
		}
		if v := at + i + len(key); v != live {
			out = append(out, v)
		}
		at += i + 1
	}
}
