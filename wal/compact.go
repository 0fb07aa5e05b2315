package wal

import (
	"fmt"
	"os"

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
func (w *WAL) Compact() error { return w.locked(w.compactLocked) }

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
		w.stats.CompactErrs++
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
	w.stats.Compactions++
	w.compactedSize = w.fileSize()
	return nil
}

// copyTo writes the meta, the user's values and the pending entries into
// the new file name. It returns the change in the entries' cost (a frame
// stored anew with only its pending events costs less).
func (w *WAL) copyTo(name string) (costDelta int64, err error) {
	err = w.db.View(func(src *bolt.Tx) error {
		f, err := w.createFresh(name, func(mb *bolt.Bucket) error { return copyValues(src.Bucket(metaBucket), mb) })
		if err != nil {
			return err
		}
		defer f.close()
		// Values are copied as stored; a frame with removed events has its
		// pending ones stored anew.
		gone := max(w.meta.removedSeq, w.acked.Load())
		for val, err := range walk(src.Bucket(eventsBucket), w.path, gone+1) {
			if err == nil && val.first > gone {
				err = f.copy(val.key, val.raw)
			} else if err == nil {
				costDelta -= val.cost()
				val.each(gone+1, func(seq uint64, data []byte) bool {
					err = f.add(seq, val.at, data)
					return err == nil
				})
			}
			if err != nil {
				return err
			}
		}
		if err := f.finish(&w.meta); err != nil {
			return err
		}
		costDelta += f.fr.cost
		return nil
	})
	return costDelta, err
}

// fresh is a new spool file written whole (compaction, salvage): bbolt
// syncs neither its commits nor its growth, so the file ends where its data
// ends, and finish syncs it once before it is renamed in. Values are put in
// transactions of about copyChunk bytes.
type fresh struct {
	db   *bolt.DB
	tx   *bolt.Tx
	fr   framer // stores events anew; fr.cost is their cost
	size int
	sync bool
}

// createFresh creates the new file name with its buckets, lets values fill
// the meta bucket, and begins its first transaction.
func (w *WAL) createFresh(name string, values func(mb *bolt.Bucket) error) (*fresh, error) {
	// Mapping up to the cap at once avoids bbolt's remap at every doubling
	// (not for the live spool: bbolt would grow its file a full step).
	db, err := bolt.Open(w.sd.join(name), 0o600, &bolt.Options{NoSync: true, NoGrowSync: true,
		Timeout: w.opts.LockTimeout, InitialMmapSize: int(w.opts.MaxBytes + 1<<20),
		OpenFile: func(_ string, flag int, _ os.FileMode) (*os.File, error) {
			return w.sd.open(name, flag|os.O_EXCL)
		}})
	if err != nil {
		return nil, err
	}
	f := &fresh{db: db, sync: !w.opts.NoSync}
	if f.tx, err = db.Begin(true); err == nil {
		if _, err = f.tx.CreateBucket(eventsBucket); err == nil {
			f.packed()
			var mb *bolt.Bucket
			if mb, err = f.tx.CreateBucket(metaBucket); err == nil {
				err = values(mb)
			}
		}
	}
	if err != nil {
		f.close()
		return nil, err
	}
	return f, nil
}

// packed makes the transaction's events bucket the framer's, its leaves
// filled whole: keys only grow, as in the live spool. A half-filled copy
// could come out larger than the cap it was made to meet.
func (f *fresh) packed() {
	f.fr.eb = f.tx.Bucket(eventsBucket)
	f.fr.eb.FillPercent = 1.0
}

// copy puts the stored value v under key as it is.
func (f *fresh) copy(key, v []byte) error {
	err := f.fr.flush()
	if err == nil {
		err = f.fr.eb.Put(key, v)
	}
	return f.grew(len(v), err)
}

// add stores event seq anew, in a frame with the events added before it if
// they are its neighbours in sequence and share its stamp.
func (f *fresh) add(seq uint64, at stamp, data []byte) error {
	return f.grew(len(data), f.fr.add(seq, at, data))
}

// grew commits the transaction once it holds about copyChunk bytes.
func (f *fresh) grew(n int, err error) error {
	if f.size += n; err != nil || f.size < copyChunk {
		return err
	}
	f.size = 0
	if err := f.commit(); err != nil {
		return err
	}
	if f.tx, err = f.db.Begin(true); err == nil {
		f.packed()
	}
	return err
}

func (f *fresh) commit() error {
	if err := f.fr.flush(); err != nil {
		return err
	}
	return f.tx.Commit()
}

// finish commits the rest with the meta m and syncs the file.
func (f *fresh) finish(m *meta) error {
	err := m.store(f.tx.Bucket(metaBucket))
	if err == nil {
		err = f.commit()
	}
	if err == nil && f.sync {
		err = f.db.Sync()
	}
	return err
}

// close ends a transaction left open and closes the file.
func (f *fresh) close() {
	if f.tx != nil {
		_ = f.tx.Rollback() // an error once committed
	}
	f.db.Close()
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
