package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/evspool/evspool/internal/boltfile"
	bolt "go.etcd.io/bbolt"
)

// Repair salvages the spool after Read reported a *CorruptionError: every
// readable pending entry is copied, in order, into a fresh file that
// replaces the damaged one, which is kept aside. Appends wait meanwhile. If
// the salvage fails, the damaged file stays in use; call Repair again later.
//
// After a memory fault (maybe an I/O error) the file is reopened and
// salvaged only if Open's checks find damage; else the report is nil.
func (w *WAL) Repair(cause error) (*SalvageReport, error) {
	var r *SalvageReport
	err := w.locked(func() (err error) {
		r, err = w.repairLocked(cause)
		return err
	})
	return r, err
}

// repairLocked is Repair with wmu held.
func (w *WAL) repairLocked(cause error) (*SalvageReport, error) {
	var fe *faultError
	if errors.As(cause, &fe) {
		return w.reopenAfterFault(cause)
	}
	w.dbmu.Lock()
	defer w.dbmu.Unlock()
	if err := w.db.Close(); err != nil {
		return nil, fmt.Errorf("wal: repair: close %s: %w", w.path, err)
	}
	r, err := w.salvageFile(cause)
	if err != nil {
		// spool.db is untouched: keep using it so appends are stored.
		if rerr := w.reopenDamaged(); rerr != nil {
			w.fail(fmt.Errorf("%w; reopening the damaged file: %v", err, rerr))
		}
		return nil, err
	}
	w.salvage = r
	if w.opts.OnLoss != nil {
		w.opts.OnLoss(Loss{Salvage: r})
	}
	w.group.freed()
	return r, nil
}

// reopenDamaged opens spool.db again after a failed salvage, without the
// verifying scan (openBolt's check finds both buckets); the in-memory state
// still describes it.
func (w *WAL) reopenDamaged() error {
	if _, err := w.sd.stat(fileName); err != nil {
		return err // not created anew
	}
	db, err := w.openBolt()
	if err == nil {
		w.db = db
	}
	return err
}

// salvageFile rebuilds the damaged spool.db and opens the result as w.db.
// Crash-safe at every step:
//
//  1. every sound pending record is written into spool.db.salvage, fsync'd;
//  2. spool.db is linked (or copied) to spool.db.corrupt-<time>, dir fsync'd;
//  3. spool.db.salvage is renamed over spool.db, dir fsync'd.
//
// A crash before 3 leaves the damaged spool.db, which the next Open salvages
// again; after 3, the salvaged file. A failed step leaves spool.db as it was.
func (w *WAL) salvageFile(cause error) (*SalvageReport, error) {
	tmp := fileName + salvageSuffix
	if err := w.sd.remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("wal: salvage of damaged spool %s: %w (cause: %v)", w.path, err, cause)
	}
	r := &SalvageReport{Cause: cause}
	fail := func(step string, err error) (*SalvageReport, error) {
		_ = w.sd.remove(tmp)
		return nil, fmt.Errorf("wal: salvage of damaged spool %s failed (%s: %w); the file is left as it was (cause: %v)",
			w.path, step, err, cause)
	}
	if err := w.rebuild(tmp, r); err != nil {
		return fail("rebuild", err)
	}
	w.opts.crashPoint("salvage-rebuilt")
	corrupt, err := w.keepCopy(w.corruptName())
	if err != nil {
		return fail("keep the damaged copy", err)
	}
	if err := w.syncDir(); err != nil {
		return fail("keep the damaged copy", err)
	}
	w.opts.crashPoint("salvage-kept")
	if err := w.sd.rename(tmp, fileName); err != nil {
		return fail("replace", err)
	}
	if err := w.syncDir(); err != nil {
		// The rename happened, durable or not: the salvaged file is in use.
		return nil, fmt.Errorf("wal: salvage of damaged spool %s: %w (cause: %v)", w.path, err, cause)
	}
	w.opts.crashPoint("salvage-renamed")
	r.CorruptPath = corrupt
	r.RemovedCopies = w.pruneCopies()
	db, err := w.openLoaded()
	if err == nil {
		w.db = db
		return r, nil
	}
	return nil, fmt.Errorf("wal: open the salvaged spool %s: %w (cause: %v)", w.path, err, cause)
}

// rebuild writes the salvage of spool.db into the new file dst and fsyncs
// it. The first pass finds the meta values, the user's values and the newest
// sound record; the second copies entries past the removal mark in chunks.
func (w *WAL) rebuild(dst string, r *SalvageReport) error {
	src, err := w.sd.open(fileName, os.O_RDONLY)
	if err != nil {
		return err
	}
	defer src.Close()
	size := w.sd.size(fileName)
	kept := copies{}
	var maxSeq uint64
	if err := boltfile.Scan(src, size, costPage, func(k, v []byte) {
		kept.add(k, v)
		if val, err := decodeValue(k, v); err == nil {
			maxSeq = max(maxSeq, val.last())
		}
	}); err != nil {
		return err
	}
	m, holes, ok := inForceMeta(src, size)
	if !ok {
		m = kept.meta()
		holes, _ = holesIn(kept) // every copy kept passed its check
	}
	// Every number above the removal mark and below handedOut was pending.
	handedOut := max(m.nextSeq, maxSeq+1)
	if w.marks.exact {
		handedOut = max(handedOut, w.marks.reserved)
	}
	// The marks file knows numbers and removals the damaged file may lack.
	m.nextSeq = max(m.nextSeq, maxSeq+1, w.marks.reserved, w.marks.removed+1, 1)
	m.removedSeq = max(m.removedSeq, w.marks.removed)

	// The holes' events were dropped: not brought back, not missing.
	gone := pastMark(holes, m.removedSeq)
	f, err := w.createFresh(dst, func(mb *bolt.Bucket) error {
		if err := kept.putValues(mb); err != nil {
			return err
		}
		return putHoles(mb, gone)
	})
	if err != nil {
		return err
	}
	defer f.close()
	seen := make(map[uint64]struct{})
	var werr error
	if err := boltfile.Scan(src, size, costPage, func(k, v []byte) {
		val, err := decodeValue(k, v)
		if err != nil {
			return
		}
		val.each(m.removedSeq+1, func(seq uint64, data []byte) bool {
			if _, dup := seen[seq]; !dup && werr == nil && !gone.has(seq) {
				seen[seq] = struct{}{}
				werr = f.add(seq, val.at, data)
			}
			return true
		})
	}); err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	r.Recovered = uint64(len(seen))
	for seq := range seen {
		if r.FirstSeq == 0 || seq < r.FirstSeq {
			r.FirstSeq = seq
		}
		r.LastSeq = max(r.LastSeq, seq)
	}
	dropped := gone.addTo(seen, handedOut)
	if handedOut > m.removedSeq+1 {
		r.Missing = handedOut - 1 - m.removedSeq - r.Recovered - dropped
		r.Unreadable = gaps(seen, m.removedSeq+1, handedOut)
	}
	// Counted in the new file, so the count is durable with the salvage.
	m.unreadable += r.Missing
	return f.finish(&m)
}

func mustSeq(k []byte) uint64 {
	seq, _ := keySeq(k)
	return seq
}

// inForceMeta reads the meta bucket in force in the size bytes of f, and
// the holes it lists; ok only if it is whole. Else salvage takes, per value
// and per hole, the largest checked copy in the file's pages (every value
// only grows, and a hole's copies differ in how far it reached); the
// records and the marks file then raise them.
func inForceMeta(f io.ReaderAt, size int64) (m meta, holes []SeqRange, ok bool) {
	pairs := map[string][]byte{}
	dup := false
	found := boltfile.InForceRoot(f, size, func(k, v []byte) {
		if len(k) == keySize {
			return // an inline events bucket's entry
		}
		_, dup = pairs[string(k)]
		pairs[string(k)] = v
	})
	if !found || dup || pairs[string(keyNextSeq)] == nil || pairs[string(keyRemovedSeq)] == nil {
		return m, nil, false
	}
	state, err := m.decode(func(k []byte) []byte { return pairs[string(k)] }, nil)
	if err == nil {
		holes, err = holesIn(pairs)
	}
	return m, holes, err == nil && state != metaEmpty
}
