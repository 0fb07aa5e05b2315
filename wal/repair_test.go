package wal_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/evspool/evspool/wal"
)

// spCorrupt rewrites the file at path with what damage returns.
func spCorrupt(t testing.TB, path string, damage func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, damage(b), 0o600))
}

// spPage describes a page of a (sound, closed) spool file, as bbolt sees it.
type spPage struct {
	id   int
	typ  string // "meta", "freelist", "branch", "leaf", "free"
	seqs []uint64
	root bool // the leaf holding the buckets themselves (and the inline meta bucket)
}

// spPages lists the pages of the spool file at path that are in use.
func spPages(t testing.TB, path string) []spPage {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	require.NoError(t, err)
	defer db.Close()
	var pages []spPage
	require.NoError(t, db.View(func(tx *bolt.Tx) error {
		for id := 0; ; {
			info, err := tx.Page(id)
			if err != nil || info == nil {
				return err
			}
			p := spPage{id: id, typ: info.Type}
			if info.Type == "leaf" {
				p.seqs, p.root = spLeafKeys(raw[id*4096 : (id+1+info.OverflowCount)*4096])
			}
			pages = append(pages, p)
			if info.Type == "free" {
				id++
			} else {
				id += 1 + info.OverflowCount
			}
		}
	}))
	return pages
}

// spLeafKeys returns the sequence numbers of a leaf page of events, or
// whether it is the root leaf (holding bucket entries).
func spLeafKeys(page []byte) (seqs []uint64, root bool) {
	count := int(binary.LittleEndian.Uint16(page[10:12]))
	for i := 0; i < count; i++ {
		at := 16 + i*16
		flags := binary.LittleEndian.Uint32(page[at:])
		pos := int(binary.LittleEndian.Uint32(page[at+4:]))
		ksize := int(binary.LittleEndian.Uint32(page[at+8:]))
		if flags&1 != 0 {
			root = true
			continue
		}
		if ksize == 8 {
			seqs = append(seqs, binary.BigEndian.Uint64(page[at+pos:]))
		}
	}
	return seqs, root
}

// spOpenFiles returns the process's open file descriptors.
func spOpenFiles(t testing.TB) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(fds)
}

func spPick(t testing.TB, pages []spPage, ok func(spPage) bool) spPage {
	t.Helper()
	for _, p := range pages {
		if ok(p) {
			return p
		}
	}
	t.Fatalf("no page found among %d", len(pages))
	return spPage{}
}

func spRandomPage(seed uint64, b []byte, id int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	for i := id * 4096; i < (id+1)*4096 && i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
	return b
}

func spZeroPage(b []byte, id int) []byte {
	clear(b[id*4096 : (id+1)*4096])
	return b
}

const (
	spCorruptAcked   = 100 // events 1..100 acknowledged before the damage
	spCorruptLast    = 410 // events 101..410 pending
	spCorruptPending = spCorruptLast - spCorruptAcked
)

// spCorruptSetup writes a spool with acknowledged and pending events in
// many transactions (so the file holds stale copies of pages too), closes it
// and returns its directory and file path.
func spCorruptSetup(t *testing.T) (dir, path string) {
	dir = t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	ctx := context.Background()
	for i := uint64(1); i <= 400; i += 10 {
		batch := make([][]byte, 10)
		for j := range batch {
			batch[j] = spEvent(i+uint64(j), 200)
		}
		_, err := w.Append(ctx, batch...)
		require.NoError(t, err)
		if i == 51 || i == 101 {
			require.NoError(t, w.Ack(i-1))
		}
	}
	require.NoError(t, w.Ack(spCorruptAcked))
	for i := uint64(401); i <= spCorruptLast; i++ {
		_, err := w.Append(ctx, spEvent(i, 200))
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return dir, filepath.Join(dir, "spool.db")
}

// spCheckRecovered checks that entries are a subset of the pending events
// written by spCorruptSetup, in order, with their contents, and that none
// that was acknowledged came back.
func spCheckRecovered(t *testing.T, es []wal.Entry) {
	t.Helper()
	var prev uint64
	for _, e := range es {
		require.Greater(t, e.Seq, prev, "out of order")
		require.Greater(t, e.Seq, uint64(spCorruptAcked), "acknowledged event %d came back", e.Seq)
		require.LessOrEqual(t, e.Seq, uint64(spCorruptLast), "event %d was never written", e.Seq)
		require.Equal(t, spEvent(e.Seq, 200), e.Data, "contents of %d", e.Seq)
		prev = e.Seq
	}
}

// TestCorruptionTable damages a closed spool in named ways. Open must never
// fail or panic: it moves the damaged file aside, salvages what it can and
// says so; appends and reopening then work as usual. Modelled on etcd's
// wal/repair_test.go.
// Not parallel: it counts the process's open file descriptors.
func TestCorruptionTable(t *testing.T) {
	cases := []struct {
		name string
		// damage changes the file's bytes; pages lists the file's pages.
		damage func(b []byte, pages []spPage) []byte
		// mustSalvage: Open must detect the damage. Damage that bbolt can
		// live with (a stale meta page, a free page) need not be detected.
		mustSalvage bool
		// minRecovered is how many pending events must come back at least.
		minRecovered int
	}{
		{"truncated to half", func(b []byte, _ []spPage) []byte { return b[:len(b)/2] }, true, 0},
		{"truncated to one page", func(b []byte, _ []spPage) []byte { return b[:4096] }, true, 0},
		{"truncated to 100 bytes", func(b []byte, _ []spPage) []byte { return b[:100] }, true, 0},
		{"truncated to zero bytes", func(b []byte, _ []spPage) []byte { return b[:0] }, true, 0},
		{"truncated by one page", func(b []byte, _ []spPage) []byte { return b[:len(b)-4096] }, false, 0},
		{"zeroed meta pages", func(b []byte, _ []spPage) []byte { return spZeroPage(spZeroPage(b, 0), 1) }, true, spCorruptPending},
		{"zeroed meta page 0", func(b []byte, _ []spPage) []byte { return spZeroPage(b, 0) }, false, spCorruptPending - 1},
		{"zeroed meta page 1", func(b []byte, _ []spPage) []byte { return spZeroPage(b, 1) }, false, spCorruptPending - 1},
		{"random bytes over the meta pages", func(b []byte, _ []spPage) []byte { return spRandomPage(7, spRandomPage(8, b, 0), 1) }, true, spCorruptPending},
		// No freelist cases: the spool runs with NoFreelistSync (etcd's
		// setting), so no freelist page is written; bbolt rebuilds the
		// freelist at Open. checkFile still validates one if a file has it.
		{"random bytes over a data page", func(b []byte, pages []spPage) []byte {
			p := spPick(t, pages, func(p spPage) bool {
				return p.typ == "leaf" && len(p.seqs) > 0 && p.seqs[0] > 200 && p.seqs[0] < 300
			})
			return spRandomPage(1, b, p.id)
		}, true, spCorruptPending - 20},
		{"zeroed data page", func(b []byte, pages []spPage) []byte {
			p := spPick(t, pages, func(p spPage) bool {
				return p.typ == "leaf" && len(p.seqs) > 0 && p.seqs[0] > 200 && p.seqs[0] < 300
			})
			return spZeroPage(b, p.id)
		}, true, spCorruptPending - 20},
		{"random bytes over the root page", func(b []byte, pages []spPage) []byte {
			p := spPick(t, pages, func(p spPage) bool { return p.typ == "leaf" && p.root })
			return spRandomPage(2, b, p.id)
		}, true, spCorruptPending},
		{"random bytes over a branch page", func(b []byte, pages []spPage) []byte {
			p := spPick(t, pages, func(p spPage) bool { return p.typ == "branch" })
			return spRandomPage(4, b, p.id)
		}, true, spCorruptPending},
		{"random bytes in the middle", func(b []byte, _ []spPage) []byte {
			r := rand.New(rand.NewPCG(5, 5))
			for i := len(b)/2 - 3000; i < len(b)/2+3000; i++ {
				b[i] = byte(r.Uint32())
			}
			return b
		}, false, 0},
		{"one bit flipped in a record", func(b []byte, _ []spPage) []byte {
			i := bytes.LastIndex(b, spEvent(250, 200))
			b[i+100] ^= 0x10
			return b
		}, true, spCorruptPending - 1},
		{"not a bbolt file", func(b []byte, _ []spPage) []byte {
			return []byte(strings.Repeat("this is a text file, not a spool\n", 500))
		}, true, 0},
		{"empty file", func(b []byte, _ []spPage) []byte { return []byte{} }, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, path := spCorruptSetup(t)
			pages := spPages(t, path)
			spCorrupt(t, path, func(b []byte) []byte { return tc.damage(b, pages) })

			fds := spOpenFiles(t)
			w, err := wal.Open(dir, &wal.Options{NoSync: true})
			require.NoError(t, err)
			es := spReadAll(t, w)
			spCheckRecovered(t, es)
			require.GreaterOrEqual(t, len(es), tc.minRecovered)
			require.Equal(t, uint64(len(es)), w.Len())

			r := w.Salvaged()
			if tc.mustSalvage {
				require.NotNil(t, r, "damage not detected")
			}
			if r != nil {
				t.Logf("salvage: %v", r)
				require.Contains(t, filepath.Base(r.CorruptPath), "corrupt")
				require.Equal(t, dir, filepath.Dir(r.CorruptPath))
				require.FileExists(t, r.CorruptPath)
				require.ErrorIs(t, r.Cause, wal.ErrCorrupt)
				require.Equal(t, uint64(len(es)), r.Recovered)
				if len(es) > 0 {
					require.Equal(t, es[0].Seq, r.FirstSeq)
					require.Equal(t, es[len(es)-1].Seq, r.LastSeq)
				}
				// The spool was closed cleanly: the marks file knows the
				// next number, so every pending event not recovered is
				// counted, those past the last recovered one included.
				require.Equal(t, uint64(spCorruptPending)-r.Recovered, r.Missing, "unreadable count")
			}

			// The spool carries on: new events get new numbers. Where bbolt
			// itself fell back to the previous transaction (a stale meta page)
			// that transaction's numbers may come again; after a salvage none
			// may.
			last, err := w.Append(context.Background(), []byte("after the damage"))
			require.NoError(t, err)
			if r != nil {
				require.Greater(t, last, uint64(spCorruptLast), "sequence numbers went back")
			} else if len(es) > 0 {
				require.Greater(t, last, es[len(es)-1].Seq)
			}
			require.NoError(t, w.Close())
			require.Equal(t, fds, spOpenFiles(t), "file descriptors leaked (a panic inside bbolt.Open leaks its file)")

			w = spOpen(t, dir, &wal.Options{NoSync: true})
			require.Nil(t, w.Salvaged(), "the salvaged spool is sound")
			es2 := spReadAll(t, w)
			require.Len(t, es2, len(es)+1)
			require.Equal(t, spSeqs(es), spSeqs(es2[:len(es)]))
			require.Equal(t, last, es2[len(es)].Seq)
			require.Equal(t, "after the damage", string(es2[len(es)].Data))
			last2, err := w.Append(context.Background(), []byte("and after a restart"))
			require.NoError(t, err)
			require.Equal(t, last+1, last2)
		})
	}
}

// TestCorruptionDamagedCopyKept: the file moved aside is the damaged file, as
// it was, for inspection.
func TestCorruptionDamagedCopyKept(t *testing.T) {
	t.Parallel()
	dir, path := spCorruptSetup(t)
	text := []byte("not a spool\n")
	require.NoError(t, os.WriteFile(path, text, 0o600))
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	require.NotNil(t, w.Salvaged())
	got, err := os.ReadFile(w.Salvaged().CorruptPath)
	require.NoError(t, err)
	require.Equal(t, text, got)
}

// TestReadCorruptRecordThenRepair damages a record under an open spool: Read
// reports it as a *CorruptionError naming the file and the sequence number;
// Repair salvages every other entry.
func TestReadCorruptRecordThenRepair(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := spOpen(t, dir, &wal.Options{NoSync: true})
	batch := make([][]byte, 50)
	for i := range batch {
		batch[i] = spEvent(uint64(i+1), 300)
	}
	// One Append an event: each a record of its own (the damage of a
	// frame, which holds a commit's events, is TestDamagedFrame's).
	for _, e := range batch {
		_, err := w.Append(context.Background(), e)
		require.NoError(t, err)
	}
	// A value its user keeps beside the events, raised twice: the salvage
	// keeps the largest copy, the last one stored.
	for _, n := range []byte{1, 2} {
		require.NoError(t, w.SetValues(map[string][]byte{"reported_unreadable_events": {0, 0, 0, 0, 0, 0, 0, n}}))
	}

	// Flip a bit of event 25's bytes in the file, under bbolt's feet.
	raw, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	at := bytes.Index(raw, spEvent(25, 300))
	require.Positive(t, at)
	require.Equal(t, -1, bytes.Index(raw[at+1:], spEvent(25, 300)), "one copy only")
	f, err := os.OpenFile(w.Path(), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{raw[at+150] ^ 0x01}, int64(at+150))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	es, err := w.Read(1, 0, 0)
	require.ErrorIs(t, err, wal.ErrCorrupt)
	var ce *wal.CorruptionError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, uint64(25), ce.Seq)
	require.Equal(t, w.Path(), ce.Path)
	require.Contains(t, err.Error(), w.Path())
	require.Equal(t, spRange(1, 24), spSeqs(es), "what precedes the damage is returned")

	// Reads before the damage still work; reads across it keep failing.
	es, err = w.Read(1, 10, 0)
	require.NoError(t, err)
	require.Len(t, es, 10)
	_, err = w.Read(20, 10, 0)
	require.ErrorIs(t, err, wal.ErrCorrupt)

	r, err := w.Repair(err)
	require.NoError(t, err)
	require.Equal(t, uint64(49), r.Recovered)
	require.Equal(t, uint64(1), r.Missing)
	require.Equal(t, []wal.SeqRange{{First: 25, Last: 25}}, r.Unreadable, "the unreadable event's number")
	require.Equal(t, "25", r.UnreadableSeqs())
	require.Equal(t, uint64(1), r.FirstSeq)
	require.Equal(t, uint64(50), r.LastSeq)
	require.FileExists(t, r.CorruptPath)
	require.Contains(t, filepath.Base(r.CorruptPath), "corrupt")
	require.Same(t, r, w.Salvaged())
	require.EqualValues(t, 1, w.Stats().Unreadable, "the unreadable event is a loss the spool counts")

	want := append(spRange(1, 24), spRange(26, 50)...)
	es = spReadAll(t, w)
	require.Equal(t, want, spSeqs(es))
	for _, e := range es {
		require.Equal(t, spEvent(e.Seq, 300), e.Data)
	}
	require.Equal(t, uint64(49), w.Len())
	last, err := w.Append(context.Background(), []byte("after repair"))
	require.NoError(t, err)
	require.Greater(t, last, uint64(50))
	require.NoError(t, w.Close())

	w = spOpen(t, dir, &wal.Options{NoSync: true})
	require.Nil(t, w.Salvaged())
	require.Equal(t, append(want, last), spSeqs(spReadAll(t, w)))
	require.EqualValues(t, 1, w.Stats().Unreadable, "the count survives a restart")
	v, err := w.Value("reported_unreadable_events")
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0, 2}, v, "the user's value is kept as it was: the salvage reported nothing")
}

// TestSalvageKeepsAcks: the damage destroys the only copy of the meta bucket
// that knows about the last Ack; the acknowledged events are still in freed
// pages of the file. Salvage must not bring them back.
func TestSalvageKeepsAcks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	for i := uint64(1); i <= 300; i += 10 {
		batch := make([][]byte, 10)
		for j := range batch {
			batch[j] = spEvent(i+uint64(j), 200)
		}
		_, err := w.Append(context.Background(), batch...)
		require.NoError(t, err)
	}
	require.NoError(t, w.Ack(200)) // the last transaction
	require.NoError(t, w.Close())

	path := filepath.Join(dir, "spool.db")
	pages := spPages(t, path)
	root := spPick(t, pages, func(p spPage) bool { return p.typ == "leaf" && p.root })
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotEqual(t, -1, bytes.Index(raw, spEvent(150, 200)), "acked events linger in freed pages")
	spCorrupt(t, path, func(b []byte) []byte { return spRandomPage(9, b, root.id) })

	w = spOpen(t, dir, &wal.Options{NoSync: true})
	require.NotNil(t, w.Salvaged())
	es := spReadAll(t, w)
	require.Equal(t, spRange(201, 300), spSeqs(es))
}

// TestFailedRepairThenClose: a repair that cannot proceed (the spool file
// vanished under it) leaves the spool unusable, with an error saying so;
// Close still releases it, so it can be opened again.
func TestFailedRepairThenClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true, LockTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	_, err = w.Append(context.Background(), []byte("x"))
	require.NoError(t, err)
	require.NoError(t, os.Remove(w.Path()))

	_, err = w.Repair(errors.New("test"))
	require.Error(t, err)
	_, err = w.Append(context.Background(), []byte("y"))
	require.Error(t, err)
	require.NotErrorIs(t, err, wal.ErrClosed)
	_, err = w.Read(0, 0, 0)
	require.Error(t, err)

	require.NoError(t, w.Close())
	_, err = w.Append(context.Background(), []byte("z"))
	require.ErrorIs(t, err, wal.ErrClosed)
	w2, err := wal.Open(dir, &wal.Options{NoSync: true, LockTimeout: 50 * time.Millisecond})
	require.NoError(t, err, "the failed spool still held the lock")
	require.NoError(t, w2.Close())
}
