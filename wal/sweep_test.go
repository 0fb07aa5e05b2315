package wal_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/testkit/testmode"
	"github.com/evspool/evspool/wal"
)

// Every page of a spool file, in turn, overwritten with random bytes, then
// with zeros (make test: the first 8 pages, where bbolt keeps its meta,
// freelist and root, and every 20th page after them; make torture: every
// page): Open
// must never panic (bbolt panics in goroutines of its own on some damage,
// where nothing can recover, so this would kill the test binary), and the
// spool must take appends afterwards.
func TestCorruptEveryPage(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	w, err := wal.Open(src, &wal.Options{NoSync: true})
	require.NoError(t, err)
	// 2,800 events fill a 512 KiB file (3,000 did before records carried
	// the boot clock); one more growth step would double the pages swept.
	for i := 0; i < 2800; i++ {
		_, err := w.Append(context.Background(), []byte(fmt.Sprintf("event %05d %090d", i, i)))
		require.NoError(t, err)
	}
	require.NoError(t, w.Ack(500))
	require.NoError(t, w.Close())
	orig, err := os.ReadFile(filepath.Join(src, "spool.db"))
	require.NoError(t, err)
	marks, err := os.ReadFile(filepath.Join(src, "marks"))
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(7, 7))
	const page = 4096
	for n := 0; n < 2*len(orig)/page; n++ {
		p, zero := n/2, n%2 == 1 // each page random, then zeroed
		if p >= 8 && p%20 != 0 && !testmode.Long() {
			continue
		}
		dir := t.TempDir()
		damaged := append([]byte(nil), orig...)
		for i := p * page; i < (p+1)*page && i < len(damaged); i++ {
			damaged[i] = byte(rng.Uint32())
			if zero {
				damaged[i] = 0
			}
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "spool.db"), damaged, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "marks"), marks, 0o600))
		w, err := wal.Open(dir, &wal.Options{NoSync: true})
		require.NoError(t, err, "page %d", p)
		last, err := w.Append(context.Background(), []byte("after the damage"))
		require.NoError(t, err, "page %d", p)
		require.Greater(t, last, uint64(2800), "page %d: sequence numbers never go back", p)
		entries, err := w.Read(0, 0, 0)
		require.NoError(t, err, "page %d", p)
		for i := 1; i < len(entries); i++ {
			require.Greater(t, entries[i].Seq, entries[i-1].Seq, "page %d: in order", p)
		}
		for _, e := range entries[:len(entries)-1] {
			require.Greater(t, e.Seq, uint64(500), "page %d: acked events stay gone", p)
		}
		require.NoError(t, w.Close())
	}
}
