package wal

import (
	"bytes"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Values the spool's user keeps (SetValues) live in the meta bucket under
// the user's keys, checksummed by the meta codec. Compaction copies them as
// stored; salvage keeps, of each, the largest copy (in byte order) that
// passes its check: for a big-endian counter that only grows, the newest.

// errValueKey is a key SetValues cannot store.
var errValueKey = errors.New("wal: a value's key must be 1 to 255 bytes, not 8 (an event's key), and not one of the spool's own")

// userKey tells a key a user may store: not the spool's own, and not 8
// bytes long (a page scan would take it for an event's key).
func userKey(k []byte) bool {
	return len(k) > 0 && len(k) != keySize && len(k) <= 255 && !bytes.Equal(k, keyFormat) && !isMetaKey(k) &&
		!isHoleName(k)
}

// isMetaKey tells the key of a meta value (meta.fields), or of one an
// earlier evspool kept (migrate.go).
func isMetaKey(k []byte) bool {
	for _, f := range (&meta{}).fields() {
		if bytes.Equal(k, f.key) {
			return true
		}
	}
	return bytes.Equal(k, keyHoleFirstV3) || bytes.Equal(k, keyHoleLastV3)
}

// Value returns the value SetValues stored under key; nil if none.
func (w *WAL) Value(key string) ([]byte, error) {
	if err := w.Usable(); err != nil {
		return nil, err
	}
	var v []byte
	err := w.metaTx(false, func(mb *bolt.Bucket) error {
		if raw := mb.Get([]byte(key)); raw != nil {
			p, err := decodeMeta([]byte(key), raw)
			v = bytes.Clone(p)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wal: read value %q in %s: %w", key, w.path, err)
	}
	return v, nil
}

// SetValues stores each value under its key beside the events (a nil value
// removes its key), in one transaction of its own, synced as appends are.
// Each call costs a commit: it is for a few small values.
func (w *WAL) SetValues(values map[string][]byte) error {
	for k := range values {
		if !userKey([]byte(k)) || isStateName([]byte(k)) {
			return fmt.Errorf("%w: %q", errValueKey, k)
		}
	}
	return w.locked(func() error { return w.storeValuesLocked(values) })
}

// storeValuesLocked commits the values StoreLater kept, then values, in a
// transaction of its own. It needs wmu.
func (w *WAL) storeValuesLocked(values map[string][]byte) error {
	err := w.metaTx(true, func(mb *bolt.Bucket) error {
		if err := putValues(mb, w.later); err != nil {
			return err
		}
		return putValues(mb, values)
	})
	if err != nil {
		return fmt.Errorf("wal: store values in %s: %w", w.path, err)
	}
	clear(w.later)
	return nil
}

// StoreLater stores v under key as SetValues does, but with the spool's next
// commit rather than one of its own: an Append's, the deletion of
// acknowledged entries (Ack, FlushAcks, Close), a SetValues. Until then a
// later call for the key replaces v, and a crash loses it. It keeps v: the
// caller must not change it. It is for a small value that changes with
// every acknowledgement, worth storing only in a commit made anyway.
func (w *WAL) StoreLater(key string, v []byte) error {
	if !userKey([]byte(key)) || isStateName([]byte(key)) {
		return fmt.Errorf("%w: %q", errValueKey, key)
	}
	return w.locked(func() error {
		if w.later == nil {
			w.later = make(map[string][]byte, 1)
		}
		w.later[key] = v
		return nil
	})
}

// putLater stores the values StoreLater kept, in the commit st is for.
func (st *state) putLater(mb *bolt.Bucket) error {
	if len(st.later) == 0 {
		return nil
	}
	st.laterPut = true
	return putValues(mb, st.later)
}

// flushLaterLocked commits the values StoreLater kept, alone. It needs wmu.
func (w *WAL) flushLaterLocked() error {
	if len(w.later) == 0 {
		return nil
	}
	return w.storeValuesLocked(nil)
}

// putValues stores values in mb; a nil value removes its key.
func putValues(mb *bolt.Bucket, values map[string][]byte) error {
	for k, v := range values {
		var err error
		if v == nil {
			err = mb.Delete([]byte(k))
		} else {
			err = putMeta(mb, []byte(k), v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteKeys deletes keys from b. Callers gather the keys during a cursor
// walk and delete them after it, not with Cursor.Delete: its Next may then
// skip a key.
func deleteKeys(b *bolt.Bucket, keys ...[]byte) error {
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// copyValues carries the user's values and the holes into a compacted
// copy, as stored (the holes listed are those past the removal mark).
func copyValues(src, mb *bolt.Bucket) error {
	c := src.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v != nil && (userKey(k) || isHoleName(k)) {
			if err := mb.Put(bytes.Clone(k), bytes.Clone(v)); err != nil {
				return err
			}
		}
	}
	return nil
}

// copies keeps, per meta key, hole and user key, the largest copy (in byte
// order) of its stored value that passes its check, for salvage: of a
// hole, the one that reaches furthest.
type copies map[string][]byte

func (c copies) add(k, v []byte) {
	p, err := decodeMeta(k, v)
	if err != nil || !(userKey(k) || len(p) == 8 && (isMetaKey(k) || isHoleName(k))) {
		return
	}
	if isHoleName(k) {
		if _, err := decodeHole(k, v); err != nil {
			return
		}
	}
	if old, ok := c[string(k)]; !ok || bytes.Compare(p, old[:len(old)-metaSumSize]) >= 0 {
		c[string(k)] = bytes.Clone(v)
	}
}

// meta is the meta values kept.
func (c copies) meta() (m meta) {
	for _, f := range m.fields() {
		if v, ok := c[string(f.key)]; ok {
			*f.val, _ = metaUint(f.key, v)
		}
	}
	return m
}

// putValues stores the user's values kept in a salvaged file's meta bucket.
func (c copies) putValues(mb *bolt.Bucket) error {
	for k, v := range c {
		if userKey([]byte(k)) {
			if err := mb.Put([]byte(k), v); err != nil {
				return err
			}
		}
	}
	return nil
}
