package wal

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

var (
	eventsBucket = []byte("events")
	metaBucket   = []byte("meta")
)

// Meta keys. None is 8 bytes long, so none can be taken for an event key by
// salvage's page scan (nor are the holes', holes.go, or the state's,
// statekeys.go). Every value goes through the meta codec.
var (
	keyFormat        = []byte("format_version")
	keyNextSeq       = []byte("next_sequence")
	keyRemovedSeq    = []byte("removed_through")
	keyDropOldestEvt = []byte("dropped_oldest_events")
	keyDropOldestB   = []byte("dropped_oldest_bytes")
	keyDropNewestEvt = []byte("dropped_newest_events")
	keyDropNewestB   = []byte("dropped_newest_bytes")
	keyExpiredEvt    = []byte("expired_events") // see Expire
	keyExpiredB      = []byte("expired_bytes")
	keyUnreadable    = []byte("unreadable_events") // see salvage.go
	keyBootID        = []byte("boot_id")           // see bootstamp.go
	keyBootFirstSeq  = []byte("boot_first_seq")
)

// formatVersion 3: frames (record.go), every meta value checksummed;
// migrate.go reads the earlier ones.
const formatVersion = 3

// meta is kept in the meta bucket, in the same transaction as the events.
type meta struct {
	nextSeq       uint64 // sequence number the next event gets; never goes back
	removedSeq    uint64 // every sequence up to this one has left (acked or dropped)
	droppedOldest Counter
	droppedNewest Counter
	expired       Counter // removed by Expire: older than the caller's maximum age
	bootID        uint64  // the boot the newest records were written in (bootstamp.go)
	bootFirstSeq  uint64  // the first sequence number written in that boot
	unreadable    uint64  // events lost to damage: not recovered by a salvage (salvage.go)
}

type metaField struct {
	key []byte
	val *uint64
}

// metaFields is how many values meta has.
const metaFields = 11

// fields lists the meta values: stored, loaded, salvaged and migrated alike.
// An array, not a slice: it stays on the stack of a commit.
func (m *meta) fields() [metaFields]metaField {
	return [metaFields]metaField{
		{keyNextSeq, &m.nextSeq}, {keyRemovedSeq, &m.removedSeq},
		{keyDropOldestEvt, &m.droppedOldest.Events}, {keyDropOldestB, &m.droppedOldest.Bytes},
		{keyDropNewestEvt, &m.droppedNewest.Events}, {keyDropNewestB, &m.droppedNewest.Bytes},
		{keyExpiredEvt, &m.expired.Events}, {keyExpiredB, &m.expired.Bytes},
		{keyUnreadable, &m.unreadable}, {keyBootID, &m.bootID}, {keyBootFirstSeq, &m.bootFirstSeq},
	}
}

// metaRequired tells the values every file of format 2 holds; the others
// (counters a later version adds, say) read as 0 when absent.
func metaRequired(key []byte) bool {
	return string(key) == string(keyNextSeq) || string(key) == string(keyRemovedSeq)
}

// metaState is what load found in the meta bucket.
type metaState int

const (
	metaCurrent metaState = iota // today's format, all sound
	metaEmpty                    // a new file: nothing stored yet
	metaOlder                    // an earlier format (migrate.go): to be stored anew
)

// load reads the meta bucket; a bad value, a nested bucket or an unknown
// format is damage.
func (m *meta) load(b *bolt.Bucket) (metaState, error) {
	if b == nil {
		return 0, errors.New("meta bucket missing")
	}
	state, err := m.decode(b.Get, b.ForEach)
	if err != nil {
		return 0, err
	}
	if state == metaEmpty {
		if k, _ := b.Cursor().First(); k != nil {
			return 0, errors.New("meta bucket without its format_version")
		}
		return metaEmpty, nil
	}
	return state, nil
}

// metaWalk is a meta bucket's ForEach (a nested bucket's value is nil).
type metaWalk func(fn func(k, v []byte) error) error

// decode reads the meta values through get; each, if not nil, checks every
// key of the bucket.
func (m *meta) decode(get func([]byte) []byte, each metaWalk) (metaState, error) {
	*m = meta{nextSeq: 1}
	v := get(keyFormat)
	if v == nil {
		return metaEmpty, nil
	}
	if older, err := m.decodeOlder(v, get, each); older {
		return metaOlder, err
	}
	version, err := metaUint(keyFormat, v)
	if err != nil {
		return 0, err
	}
	if version != formatVersion {
		return 0, fmt.Errorf("meta format_version %d: this evspool reads versions 1 to 3 (a newer evspool wrote it, or the value is damaged)", version)
	}
	return metaCurrent, m.decodeValues(get, each)
}

// decodeValues reads today's meta values (see decode).
func (m *meta) decodeValues(get func([]byte) []byte, each metaWalk) error {
	if each != nil {
		if err := each(func(k, v []byte) error {
			if v == nil {
				return fmt.Errorf("meta key %q is a bucket, not a value", k)
			}
			_, err := decodeMeta(k, v)
			return err
		}); err != nil {
			return err
		}
	}
	for _, f := range m.fields() {
		v := get(f.key)
		if v == nil {
			if metaRequired(f.key) {
				return fmt.Errorf("meta value %q missing", f.key)
			}
			continue
		}
		n, err := metaUint(f.key, v)
		if err != nil {
			return err
		}
		*f.val = n
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
// moves, and those others that differ from prev, the state as last
// committed. Writing them all is a sizeable part of a small commit.
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

// metaTx runs f on the meta bucket in a transaction, a write one (which
// needs wmu) if write.
func (w *WAL) metaTx(write bool, f func(*bolt.Bucket) error) error {
	w.dbmu.RLock()
	defer w.dbmu.RUnlock()
	run := w.db.View
	if write {
		run = w.db.Update
	}
	return guard(w.path, func() error {
		return run(func(tx *bolt.Tx) error { return f(tx.Bucket(metaBucket)) })
	})
}
