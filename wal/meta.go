package wal

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var (
	eventsBucket = []byte("events")
	metaBucket   = []byte("meta")
)

// Meta keys. None is 8 bytes long, so none can be mistaken for an event key
// when a damaged file is scanned page by page. Every value is stored through
// the meta codec (metacodec.go).
var (
	keyFormat        = []byte("format_version")
	keyNextSeq       = []byte("next_sequence")
	keyRemovedSeq    = []byte("removed_through")
	keyDropOldestEvt = []byte("dropped_oldest_events")
	keyDropOldestB   = []byte("dropped_oldest_bytes")
	keyDropNewestEvt = []byte("dropped_newest_events")
	keyDropNewestB   = []byte("dropped_newest_bytes")
	keyExpiredEvt    = []byte("expired_events") // see expire.go
	keyExpiredB      = []byte("expired_bytes")
	keyUnreadable    = []byte("unreadable_events") // see salvage.go
	keyRefused       = []byte("refused_events")    // see CountRefused
)

const (
	// formatVersion 3: events of a commit may share a value, a frame
	// (record.go). Its meta values are format 2's.
	formatVersion = 3
	// framelessFormat 2: every meta value checksummed (metacodec.go), an
	// event a value. Read as it is; the first Open marks it format 3
	// before anything is stored, so that an evspool of format 2, which
	// would take a frame for damage, refuses the file instead.
	framelessFormat = 2
	// legacyFormat 1: bare 8-byte values, migrated by the first Open.
	legacyFormat = 1
)

// checkedFormat tells the versions whose meta values are checksummed.
func checkedFormat(v uint64) bool { return v == formatVersion || v == framelessFormat }

// meta is the state kept in the meta bucket, written in the same transaction
// as the events it describes.
type meta struct {
	nextSeq       uint64 // sequence number the next event gets; never goes back
	removedSeq    uint64 // every sequence up to this one has left (acked or dropped)
	droppedOldest Counter
	droppedNewest Counter
	expired       Counter // removed by Expire: older than the caller's maximum age
	bootID        uint64  // the boot the newest records were written in (bootstamp.go)
	bootFirstSeq  uint64  // the first sequence number written in that boot
	unreadable    uint64  // events lost to damage: not recovered by a salvage (salvage.go)
	refused       uint64  // events refused before they reached the spool (CountRefused)
}

type metaField struct {
	key []byte
	val *uint64
}

// fields lists the meta values. A value added here is stored, loaded,
// checked, salvaged and migrated with the others.
func (m *meta) fields() []metaField {
	return append([]metaField{
		{keyNextSeq, &m.nextSeq}, {keyRemovedSeq, &m.removedSeq},
		{keyDropOldestEvt, &m.droppedOldest.Events}, {keyDropOldestB, &m.droppedOldest.Bytes},
		{keyDropNewestEvt, &m.droppedNewest.Events}, {keyDropNewestB, &m.droppedNewest.Bytes},
		{keyExpiredEvt, &m.expired.Events}, {keyExpiredB, &m.expired.Bytes},
		{keyUnreadable, &m.unreadable}, {keyRefused, &m.refused},
	}, m.bootFields()...)
}

// metaRequired tells the values every file of format 2 holds; the others
// (counters a later version adds, say) read as 0 when absent.
func metaRequired(key []byte) bool {
	return string(key) == string(keyNextSeq) || string(key) == string(keyRemovedSeq)
}

// metaState is what load found in the meta bucket.
type metaState int

const (
	metaCurrent   metaState = iota // checksummed values, all sound
	metaEmpty                      // a new file: nothing stored yet
	metaLegacy                     // bare values of format 1: to be migrated
	metaFrameless                  // format 2: to be marked format 3
)

// load reads the meta bucket. Any value that fails its check, a key that
// is a bucket, or a format it does not know is an error: damage.
func (m *meta) load(b *bolt.Bucket) (metaState, error) {
	*m = meta{nextSeq: 1}
	if b == nil {
		return 0, errors.New("meta bucket missing")
	}
	v := b.Get(keyFormat)
	if v == nil {
		if k, _ := b.Cursor().First(); k != nil {
			return 0, errors.New("meta bucket without its format_version")
		}
		return metaEmpty, nil
	}
	if len(v) == 8 && binary.BigEndian.Uint64(v) == legacyFormat {
		return metaLegacy, m.loadLegacy(b)
	}
	version, _, err := getMetaUint(b, keyFormat)
	if err != nil {
		return 0, err
	}
	if !checkedFormat(version) {
		return 0, fmt.Errorf("meta format_version %d: this evspool reads versions 1 to 3 (a newer evspool wrote it, or the value is damaged)", version)
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			return 0, fmt.Errorf("meta key %q is a bucket, not a value", k)
		}
		if _, err := decodeMeta(k, v); err != nil {
			return 0, err
		}
	}
	for _, f := range m.fields() {
		n, ok, err := getMetaUint(b, f.key)
		switch {
		case err != nil:
			return 0, err
		case ok:
			*f.val = n
		case metaRequired(f.key):
			return 0, fmt.Errorf("meta value %q missing", f.key)
		}
	}
	m.nextSeq = max(m.nextSeq, 1)
	if version == framelessFormat {
		return metaFrameless, nil
	}
	return metaCurrent, nil
}

// loadLegacy reads format 1's bare values (no checksum to check: each must
// at least be 8 bytes).
func (m *meta) loadLegacy(b *bolt.Bucket) error {
	for _, f := range m.fields() {
		v := b.Get(f.key)
		if v == nil {
			continue
		}
		if len(v) != 8 {
			return fmt.Errorf("meta value %q of %d bytes (format 1 stores 8)", f.key, len(v))
		}
		*f.val = binary.BigEndian.Uint64(v)
	}
	m.nextSeq = max(m.nextSeq, 1)
	return nil
}

// store writes every value, checksummed, and the format version.
func (m *meta) store(b *bolt.Bucket) error {
	for _, f := range m.fields() {
		if err := putMetaUint(b, f.key, *f.val); err != nil {
			return err
		}
	}
	return putMetaUint(b, keyFormat, formatVersion)
}

// storeChanged is store for an append's commit: the two numbers a commit
// moves, and of the others those that differ from prev, what the file holds
// (the state as last committed; values missing from it read 0, as load
// reads them). Writing all of them, checksummed, took a fifth of a 64-event
// commit's own work.
func (m *meta) storeChanged(b *bolt.Bucket, prev *meta) error {
	now, was := m.fields(), prev.fields()
	for i, f := range now {
		if metaRequired(f.key) || *f.val != *was[i].val {
			if err := putMetaUint(b, f.key, *f.val); err != nil {
				return err
			}
		}
	}
	return nil
}

// viewMeta runs f on the meta bucket in a read transaction.
func (w *WAL) viewMeta(f func(*bolt.Bucket) error) error {
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	return guard(w.path, func() error {
		return w.db.View(func(tx *bolt.Tx) error { return f(tx.Bucket(metaBucket)) })
	})
}

// updateMeta runs f on the meta bucket in a write transaction of its own,
// for the rare values written apart from an append (SetValues,
// CountRefused). The caller holds w.wmu.
func (w *WAL) updateMeta(f func(*bolt.Bucket) error) error {
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	return guard(w.path, func() error {
		return w.db.Update(func(tx *bolt.Tx) error { return f(tx.Bucket(metaBucket)) })
	})
}
