package wal

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	// reclaimMinFile is the file size below which Ack does not compact.
	reclaimMinFile = 512 << 10
	// reclaimMaxCopy bounds what a reclaiming compaction copies.
	reclaimMaxCopy = 2 << 20
	// copyChunk bounds the dirty pages one copy transaction holds in memory.
	copyChunk = 4 << 20
)

// Compact copies the pending entries into a fresh file and renames it over
// the spool, giving back space bbolt never returns. Appends wait meanwhile.
// Ack compacts by itself once a backlog has drained; call it only to force it.
func (w *WAL) Compact() error {
	if err := w.ready(); err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	return w.compactLocked()
}

func (w *WAL) maybeReclaim() {
	size := w.fileSize()
	// A compaction holds up appends while it copies: copy only a nearly
	// drained backlog, a few MiB at most.
	if size > reclaimMinFile && w.cost.Load() < min(size/16, reclaimMaxCopy) {
		w.compactOrCount()
	}
}

// enforceCap runs after each commit: if the file outgrew the cap (freed
// pages bbolt could not reuse), compact it, and if that is not enough, lower
// the budget so the policy acts sooner.
func (w *WAL) enforceCap() {
	size := w.fileSize()
	if size <= w.opts.MaxBytes {
		return
	}
	// Not grown since the last compaction: no fragmentation to undo.
	if size > w.compactedSize {
		w.compactOrCount()
		size = w.fileSize()
	}
	if size > w.opts.MaxBytes && w.budget.Load() > w.opts.MaxBytes/2 {
		w.budget.Add(-w.opts.MaxBytes / 16)
	}
}

func (w *WAL) compactOrCount() {
	if err := w.compactLocked(); err != nil {
		w.stats.compactErrors++
	}
}

// compactLocked needs wmu. Reads go on during the copy, waiting only for the swap.
func (w *WAL) compactLocked() error {
	// Delete acked entries first, or the copy would bring them back.
	if err := w.flushAcksLocked(); err != nil {
		return fmt.Errorf("wal: compact %s: %w", w.path, err)
	}
	tmp := fileName + compactSuffix
	_ = w.sd.remove(tmp)
	w.dbmu.RLock()
	costDelta, err := w.copyTo(tmp)
	w.dbmu.RUnlock()
	if err != nil {
		_ = w.sd.remove(tmp)
		return fmt.Errorf("wal: compact %s: %w", w.path, err)
	}
	w.dbmu.Lock()
	defer w.dbmu.Unlock()
	if err := w.db.Close(); err != nil {
		return fmt.Errorf("wal: compact: close %s: %w", w.path, err)
	}
	renameErr := w.sd.rename(tmp, fileName)
	if renameErr == nil {
		renameErr = w.syncDir()
	}
	db, err := w.openBolt()
	if err != nil {
		err = fmt.Errorf("wal: compact: reopen %s: %w", w.path, err)
		w.fail(err)
		return err
	}
	w.db = db
	if renameErr != nil {
		_ = w.sd.remove(tmp)
		return fmt.Errorf("wal: compact: %w", renameErr)
	}
	w.cost.Add(costDelta)
	w.stats.compactions++
	w.compactedSize = w.fileSize()
	return nil
}

// copyTo writes the meta and the pending entries, in bounded chunks, into
// the new file name and syncs it. It returns the change in the entries' cost
// (a frame stored anew with only its pending events costs less).
func (w *WAL) copyTo(name string) (costDelta int64, err error) {
	dst, err := w.openFresh(name)
	if err != nil {
		return 0, err
	}
	defer dst.Close()
	if err := dst.Update(func(tx *bolt.Tx) error { return createBuckets(tx, &w.meta) }); err != nil {
		return 0, err
	}
	var reframed, restored int64 // the cost of the frames stored anew, before and after
	err = w.db.View(func(src *bolt.Tx) error {
		if err := dst.Update(func(tx *bolt.Tx) error { return copyValues(src, tx) }); err != nil {
			return err
		}
		// Values are copied as stored; a frame with removed events has
		// its pending ones stored anew (chunk).
		var chunk []Entry
		var raw [][2][]byte
		size := 0
		flush := func() error {
			err := dst.Update(func(tx *bolt.Tx) error {
				eb := tx.Bucket(eventsBucket)
				eb.FillPercent = 1.0
				for _, kv := range raw {
					if err := eb.Put(kv[0], kv[1]); err != nil {
						return err
					}
				}
				c, err := putEntries(tx, chunk)
				restored += c
				return err
			})
			chunk, raw, size = chunk[:0], raw[:0], 0
			return err
		}
		gone := max(w.meta.removedSeq, w.acked.Load())
		for val, err := range walk(src.Bucket(eventsBucket), w.path, gone+1) {
			if err != nil {
				return err
			}
			if val.first > gone {
				raw = append(raw, [2][]byte{val.key, val.raw})
			} else {
				reframed += val.cost()
				val.each(gone+1, func(seq uint64, data []byte) bool {
					chunk = append(chunk, Entry{Seq: seq, Time: time.Unix(0, val.at.wall), Boot: time.Duration(val.at.boot), Data: data})
					return true
				})
			}
			if size += len(val.raw); size >= copyChunk {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return flush()
	})
	if err != nil {
		return 0, err
	}
	return restored - reframed, w.syncFresh(dst)
}

// openFresh creates the new file name for compaction and salvage. The caller
// syncs it once when complete (syncFresh), so bbolt syncs neither commits
// nor growth, and the file ends where its data ends.
func (w *WAL) openFresh(name string) (*bolt.DB, error) {
	return bolt.Open(w.sd.join(name), 0o600, &bolt.Options{NoSync: true, NoGrowSync: true,
		Timeout: w.opts.LockTimeout, InitialMmapSize: mmapSize(w.opts.MaxBytes),
		OpenFile: func(_ string, flag int, _ os.FileMode) (*os.File, error) {
			return w.sd.open(name, flag|os.O_EXCL)
		}})
}

// createBuckets makes the buckets of a fresh spool file and stores m.
func createBuckets(tx *bolt.Tx, m *meta) error {
	if _, err := tx.CreateBucket(eventsBucket); err != nil {
		return err
	}
	mb, err := tx.CreateBucket(metaBucket)
	if err != nil {
		return err
	}
	return m.store(mb)
}

// putEntries stores entries, packed into frames wherever consecutive ones
// share a stamp (as their commit did), and returns their cost.
func putEntries(tx *bolt.Tx, entries []Entry) (cost int64, err error) {
	eb := tx.Bucket(eventsBucket)
	eb.FillPercent = 1.0
	slices.SortFunc(entries, func(a, b Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	var run [][]byte
	size := 0 // of run, as a frame
	var first Entry
	put := func() error {
		defer func() { run, size = run[:0], 0 }()
		key := seqKey(first.Seq)
		at := stamp{wall: first.Time.UnixNano(), boot: int64(first.Boot)}
		if len(run) == 1 {
			cost += entryCost(len(run[0]))
			return eb.Put(key, encodeRecord(key, at, run[0]))
		}
		cost += entryCost(size - recordHeader)
		return eb.Put(key, encodeFrameInto(make([]byte, size), key, at, run))
	}
	for i, e := range entries {
		if len(run) > 0 {
			if e.Seq != entries[i-1].Seq+1 || !e.Time.Equal(first.Time) || e.Boot != first.Boot ||
				frameGrow(size, len(run), len(e.Data)) > frameRoom {
				if err := put(); err != nil {
					return cost, err
				}
			}
		}
		if len(run) == 0 {
			first = e
		}
		size = frameGrow(size, len(run), len(e.Data))
		run = append(run, e.Data)
	}
	if len(run) > 0 {
		return cost, put()
	}
	return cost, nil
}

// fileSize is spool.db's size. The caller holds wmu.
//
// bbolt changes the size only by growing the file when a commit's pages
// pass its end (DB.grow), and its high-water mark never falls: the file is
// looked at again only once the mark has come within a page of the end it
// had. The mark is read only when the bytes commits allocated since (which
// bound its rise) could have brought it there.
func (w *WAL) fileSize() int64 {
	if w.closedSize >= 0 {
		return w.closedSize
	}
	if w.db == nil {
		return w.sd.size(fileName)
	}
	st := w.db.Stats()
	alloc := st.TxStats.GetPageAlloc()
	s := &w.sized
	if s.db != w.db {
		*s = sizeReading{db: w.db, size: -1, page: int64(w.db.Info().PageSize)}
	}
	if s.size >= 0 && s.highWater+(alloc-s.alloc)+s.page <= s.size {
		return s.size
	}
	s.alloc = alloc
	_ = w.db.View(func(tx *bolt.Tx) error {
		s.highWater = tx.Size()
		return nil
	})
	if s.size < 0 || s.highWater+s.page > s.size {
		s.size = w.sd.size(fileName)
	}
	return s.size
}

// sizeReading is what fileSize last read of the file and of bbolt.
type sizeReading struct {
	db        *bolt.DB
	alloc     int64 // bytes its commits had allocated (TxStats.PageAlloc)
	size      int64 // the file's size; -1 unread
	highWater int64 // the end of its last allocated page
	page      int64
}

// syncFresh makes a file from openFresh durable before it is renamed in.
func (w *WAL) syncFresh(db *bolt.DB) error {
	if w.opts.NoSync {
		return nil
	}
	return db.Sync()
}
