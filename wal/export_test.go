package wal

import bolt "go.etcd.io/bbolt"

// ValueSpan is, for the tests outside the package, the sequence numbers of
// the first and last event of the value (a record or a frame, record.go)
// that holds seq; 0, 0 if none does.
func (w *WAL) ValueSpan(seq uint64) (first, last uint64) {
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	_ = w.db.View(func(tx *bolt.Tx) error {
		for val, err := range walk(tx.Bucket(eventsBucket), w.path, seq) {
			if err == nil && val.first <= seq && seq <= val.last() {
				first, last = val.first, val.last()
			}
			break
		}
		return nil
	})
	return first, last
}

// Path is, for the tests outside the package, the path of the spool file.
func (w *WAL) Path() string { return w.path }
