package wal

import (
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SalvageReport tells what was done about a damaged spool file, so the
// caller can log it.
type SalvageReport struct {
	Cause       error  // the damage that was found
	CorruptPath string // where the damaged file was moved, kept for inspection
	Recovered   uint64 // pending entries copied into the fresh spool
	FirstSeq    uint64 // oldest recovered sequence number, 0 if none
	LastSeq     uint64 // newest recovered sequence number, 0 if none
	Missing     uint64 // sequence numbers between FirstSeq and LastSeq that could not be read
}

func (r *SalvageReport) String() string {
	return fmt.Sprintf("damaged spool file moved to %s; %d pending events recovered (sequences %d to %d, %d unreadable); cause: %v",
		r.CorruptPath, r.Recovered, r.FirstSeq, r.LastSeq, r.Missing, r.Cause)
}

// Repair salvages the spool after Read reported a *CorruptionError: the
// damaged file is moved aside and every readable pending entry is copied, in
// order, into a fresh file. Appends wait meanwhile.
func (w *WAL) Repair(cause error) (*SalvageReport, error) {
	if err := w.usable(); err != nil {
		return nil, err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if err := w.usable(); err != nil {
		return nil, err
	}
	w.dbmu.Lock()
	defer w.dbmu.Unlock()
	if err := w.db.Close(); err != nil {
		return nil, fmt.Errorf("wal: repair: close %s: %w", w.path, err)
	}
	r, err := w.salvageFile(cause)
	if err != nil {
		w.fail(err)
		return nil, err
	}
	w.salvage = r
	w.group.freed()
	return r, nil
}

// salvageFile moves the damaged file aside, scans it page by page and writes
// every sound record newer than the removal mark into a fresh spool, which it
// then opens as w.db. If the fresh spool cannot be made, the damaged file is
// put back so nothing is lost.
func (w *WAL) salvageFile(cause error) (*SalvageReport, error) {
	corrupt := fmt.Sprintf("%s.corrupt-%s", w.path, time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(w.path, corrupt); err != nil {
		return nil, fmt.Errorf("wal: move damaged spool %s aside: %w (cause: %v)", w.path, err, cause)
	}
	_ = os.Remove(w.path + ".compact")
	r := &SalvageReport{Cause: cause, CorruptPath: corrupt}
	err := w.rebuild(corrupt, r)
	if err == nil {
		var db *bolt.DB
		if db, err = w.openBolt(w.path); err == nil {
			if err = w.load(db); err == nil {
				w.db = db
				return r, w.syncDir()
			}
			db.Close()
		}
	}
	_ = os.Remove(w.path)
	if rerr := os.Rename(corrupt, w.path); rerr != nil {
		return nil, fmt.Errorf("wal: salvage %s failed (%w) and the damaged file stays at %s: %v", w.path, err, corrupt, rerr)
	}
	return nil, fmt.Errorf("wal: salvage of damaged spool %s failed, file left in place: %w (cause: %v)", w.path, err, cause)
}

// rebuild writes the salvage of the file at src into a new file at w.path.
// Two passes: the first finds the meta counters (the largest copy of each
// wins, as they only grow), the second copies entries past the removal mark,
// a chunk per transaction.
func (w *WAL) rebuild(src string, r *SalvageReport) error {
	var m meta
	var maxSeq uint64
	if err := scanPages(src, func(k, v []byte) {
		m.merge(k, v)
		if _, _, err := decodeRecord(k, v); err == nil {
			maxSeq = max(maxSeq, mustSeq(k))
		}
	}); err != nil {
		return err
	}
	// The marks file knows what the damaged file may have lost: numbers
	// handed out beyond what is left, removals newer than any meta copy.
	m.nextSeq = max(m.nextSeq, maxSeq+1, w.marks.reserved, 1)
	m.removedSeq = max(m.removedSeq, w.marks.removed)

	dst, err := openFresh(w.path, w.opts)
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := dst.Update(func(tx *bolt.Tx) error { return createBuckets(tx, &m) }); err != nil {
		return err
	}
	seen := make(map[uint64]struct{})
	var chunk []Entry
	size := 0
	var werr error
	flush := func() {
		if werr == nil && len(chunk) > 0 {
			werr = dst.Update(func(tx *bolt.Tx) error { return putEntries(tx, chunk) })
		}
		chunk, size = chunk[:0], 0
	}
	if err := scanPages(src, func(k, v []byte) {
		ts, data, err := decodeRecord(k, v)
		seq := mustSeq(k)
		if err != nil || seq <= m.removedSeq {
			return
		}
		if _, dup := seen[seq]; dup {
			return
		}
		seen[seq] = struct{}{}
		chunk = append(chunk, Entry{Seq: seq, Time: time.Unix(0, ts), Data: data})
		if size += len(data); size >= copyChunk {
			flush()
		}
	}); err != nil {
		return err
	}
	flush()
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
	if r.Recovered > 0 {
		r.Missing = r.LastSeq - r.FirstSeq + 1 - r.Recovered
	}
	return w.syncFresh(dst)
}

func mustSeq(k []byte) uint64 {
	seq, _ := keySeq(k)
	return seq
}
