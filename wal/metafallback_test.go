package wal_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/boltfile"
	"github.com/evspool/evspool/wal"
)

// TestSalvageAfterMetaFallback: the newer meta page fails its checksum and
// the marks file cannot say the spool was closed, so bbolt falls back on the
// older tree; a record of that tree, on a page the newer tree freed, is
// damaged. The newer tree holds a sound copy of it, which salvage must
// recover: Open may write nothing (a commit would reuse the newer tree's
// pages, free in the older one's view) before its check, and the damaged
// copy kept aside is the file as it was found.
func TestSalvageAfterMetaFallback(t *testing.T) {
	t.Parallel()
	dir, path := spCorruptSetup(t)
	sound, err := os.ReadFile(path)
	require.NoError(t, err)
	newer := mfNewerMeta(t, sound)

	// The newer meta page fails its checksum: bbolt reads the older tree.
	damaged := bytes.Clone(sound)
	damaged[newer*4096+48] ^= 0x30 // the freelist's page id
	require.NoError(t, os.WriteFile(path, damaged, 0o600))
	older := spPages(t, path)

	// A leaf of the older tree that the newer one freed, its events all
	// on a leaf of the newer tree: flip a byte of its first record.
	inNewer := map[uint64]bool{}
	newerLeaves := map[int]bool{}
	for _, p := range mfPagesOf(t, dir, sound) {
		if p.typ == "leaf" {
			newerLeaves[p.id] = true
			for _, seq := range p.seqs {
				inNewer[seq] = true
			}
		}
	}
	leaf := spPick(t, older, func(p spPage) bool {
		return p.typ == "leaf" && len(p.seqs) > 0 && p.seqs[0] > spCorruptAcked && !newerLeaves[p.id] &&
			!slices.ContainsFunc(p.seqs, func(s uint64) bool { return !inNewer[s] })
	})
	page := damaged[leaf.id*4096 : (leaf.id+1)*4096]
	le := binary.LittleEndian
	at := boltfile.PageHeaderSize
	val := at + int(le.Uint32(page[at+4:])+le.Uint32(page[at+8:]))
	page[val+int(le.Uint32(page[at+12:]))/2] ^= 0x30
	require.NoError(t, os.WriteFile(path, damaged, 0o600))
	mfDamageMarks(t, dir)

	w := spOpen(t, dir, &wal.Options{NoSync: true})
	r := w.Salvaged()
	require.NotNil(t, r, "the damaged record was not found")
	require.ErrorIs(t, r.Cause, wal.ErrCorrupt)
	es := spReadAll(t, w)
	spCheckRecovered(t, es)
	require.Equal(t, spRange(spCorruptAcked+1, spCorruptLast), spSeqs(es), "events %v were on the newer tree's sound leaves", leaf.seqs)
	require.Zero(t, r.Missing)
	kept, err := os.ReadFile(r.CorruptPath)
	require.NoError(t, err)
	require.True(t, bytes.Equal(damaged, kept), "Open wrote to the damaged file before salvaging it")
}

// mfNewerMeta returns the meta page (0 or 1) with the higher txid.
func mfNewerMeta(t *testing.T, b []byte) int {
	m0, ok0 := boltfile.ReadMeta(bytes.NewReader(b), 0)
	m1, ok1 := boltfile.ReadMeta(bytes.NewReader(b), 4096)
	require.True(t, ok0 && ok1 && m0.PageSize == 4096)
	if m1.TxID > m0.TxID {
		return 1
	}
	return 0
}

// mfPagesOf lists the pages of the spool file b, as bbolt sees them.
func mfPagesOf(t *testing.T, dir string, b []byte) []spPage {
	path := filepath.Join(dir, "sound.db")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	defer os.Remove(path)
	return spPages(t, path)
}

// mfDamageMarks flips a bit of the marks file's reservation: it fails its
// checksum, so nothing says the spool was closed cleanly.
func mfDamageMarks(t *testing.T, dir string) {
	spCorrupt(t, filepath.Join(dir, "marks"), func(b []byte) []byte {
		b[1] ^= 0x30
		return b
	})
}
