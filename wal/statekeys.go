package wal

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// State keys (docs/spool.md, "State keys"): beside the queue, the spool
// keeps the newest event of every key its user names, in the meta bucket
// under statePrefix and the key, put in the commit that appends the event.
// A state value's payload is
//
//	seq (8) | flags (1) | wall unix ns (8) | CLOCK_BOOTTIME ns (8) | event bytes
//
// checksummed by the meta codec. Salvage keeps the largest copy of a value
// (kv.go), so it keeps a key's newest event and, of one event, the copy
// marked set aside. A clear deletes every key and stores its own sequence
// under stateClearKey; State never gives out a value older than it, so a
// key salvage finds in a stale page stays retired.

// StateOp is what an appended event does to the state.
type StateOp struct {
	// Key is the event's key: the event becomes the key's newest. Empty:
	// the event has no key. At most MaxStateKeyLen bytes.
	Key []byte
	// Clear retires every key before the event (its Key is ignored).
	Clear bool
}

const (
	// stateShare bounds the state's bytes to Options.MaxBytes / stateShare,
	// so that the events keep the rest of the spool's cap.
	stateShare = 4
	// DefaultMaxStateKeys is the default Options.MaxStateKeys.
	DefaultMaxStateKeys = 1024
	// MaxStateKeyLen is the longest key the state keeps.
	MaxStateKeyLen = 255 - stateKeyPrefixLen

	stateKeyPrefixLen = 8
	stateHead         = 8 + 1 + 8 + 8 // seq, flags, wall, boot
	stateAside        = 1             // flag: the event was set aside as poison
)

var (
	// statePrefix makes a state key at least 9 bytes long: never an event's key.
	statePrefix   = []byte("\x00state:\x00")
	stateClearKey = []byte("\x00stateclear")
)

// stateName is the meta key that holds key's newest event.
func stateName(key []byte) []byte {
	return append(append(make([]byte, 0, len(statePrefix)+len(key)), statePrefix...), key...)
}

// isStateName tells the meta keys of the state, which SetValues may not set.
func isStateName(k []byte) bool {
	return bytes.HasPrefix(k, statePrefix) || bytes.Equal(k, stateClearKey)
}

// stateValue is a decoded state value; data aliases the stored bytes.
type stateValue struct {
	seq   uint64
	flags byte
	at    stamp
	data  []byte
}

// encodeState returns the stored value of an event under name.
func encodeState(name []byte, seq uint64, flags byte, at stamp, data []byte) []byte {
	v := make([]byte, stateHead+len(data)+metaSumSize)
	binary.BigEndian.PutUint64(v, seq)
	v[8] = flags
	binary.BigEndian.PutUint64(v[9:], uint64(at.wall))
	binary.BigEndian.PutUint64(v[17:], uint64(at.boot))
	copy(v[stateHead:], data)
	return sealMeta(name, v)
}

func decodeState(k, v []byte) (stateValue, error) {
	p, err := decodeMeta(k, v)
	if err != nil {
		return stateValue{}, err
	}
	if len(p) < stateHead {
		return stateValue{}, fmt.Errorf("state value %q of %d bytes: shorter than its header", k, len(p))
	}
	return stateValue{seq: binary.BigEndian.Uint64(p), flags: p[8],
		at:   stamp{wall: int64(binary.BigEndian.Uint64(p[9:])), boot: int64(binary.BigEndian.Uint64(p[17:]))},
		data: p[stateHead:]}, nil
}

// AppendState is Append with what each event does to the state: ops[i] is
// events[i]'s (ops may be shorter: the rest have no key). The state is
// changed in the commit that appends the events; an event that is not
// appended (ErrFull under DropNewest) changes nothing. A new key past
// Options.MaxStateKeys or past a quarter of Options.MaxBytes, or one longer
// than MaxStateKeyLen, is not kept, and a kept key whose newest event would
// take the state past that quarter is dropped (Stats.StateRefused both);
// the event is appended all the same.
func (w *WAL) AppendState(ctx context.Context, events [][]byte, ops []StateOp) (last uint64, err error) {
	if len(ops) > len(events) {
		return 0, fmt.Errorf("wal: %d state ops for %d events", len(ops), len(events))
	}
	return w.appendOps(ctx, events, ops)
}

// applyState carries ops out for events, appended from seq first on.
func (st *state) applyState(mb *bolt.Bucket, events [][]byte, ops []StateOp, first uint64, at stamp) error {
	for i, op := range ops {
		seq := first + uint64(i)
		switch {
		case op.Clear:
			if err := st.clearState(mb, seq); err != nil {
				return err
			}
		case len(op.Key) == 0:
		case len(op.Key) > MaxStateKeyLen:
			st.stateRefused++
		default:
			if err := st.putState(mb, op.Key, seq, at, events[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// putState makes event seq its key's newest. A new key past the cap on
// keys or on bytes is not kept; a kept key whose newest would take the
// state past the cap on bytes is dropped, never left at an older value.
func (st *state) putState(mb *bolt.Bucket, key []byte, seq uint64, at stamp, event []byte) error {
	name := stateName(key)
	v := encodeState(name, seq, 0, at, event)
	old := mb.Get(name)
	grown := st.stateBytes + int64(len(name)+len(v)) - int64(len(old))
	if old != nil {
		grown -= int64(len(name))
	}
	switch {
	case old == nil && (st.stateKeys >= st.maxStateKeys || grown > st.maxStateBytes):
		st.stateRefused++
		return nil
	case grown > st.maxStateBytes:
		st.stateRefused++
		st.stateKeys--
		st.stateBytes -= int64(len(name) + len(old))
		return mb.Delete(name)
	case old == nil:
		st.stateKeys++
	}
	st.stateBytes = grown
	return mb.Put(name, v)
}

// clearState deletes every key and records seq as the newest clear.
func (st *state) clearState(mb *bolt.Bucket, seq uint64) error {
	var names [][]byte
	c := mb.Cursor()
	for k, _ := c.Seek(statePrefix); k != nil && bytes.HasPrefix(k, statePrefix); k, _ = c.Next() {
		names = append(names, bytes.Clone(k))
	}
	if err := deleteKeys(mb, names...); err != nil {
		return err
	}
	st.stateKeys, st.stateBytes = 0, 0
	return putMetaUint(mb, stateClearKey, seq)
}

// State returns the newest event of every key appended before sequence
// number before, in sequence order: acknowledged, dropped or expired ones
// too, but none set aside (SetStateAside) and none older than the last
// clear. Its entries are copies.
func (w *WAL) State(before uint64) ([]Entry, error) {
	return w.StateBetween(0, before)
}

// StateBetween is State for the keys whose newest event has a sequence
// number from from up to before.
func (w *WAL) StateBetween(from, before uint64) ([]Entry, error) {
	if err := w.ready(); err != nil {
		return nil, err
	}
	var out []Entry
	err := w.metaTx(false, func(mb *bolt.Bucket) error {
		out = out[:0]
		cleared := stateCleared(mb)
		boot := w.thisBoot(mb)
		c := mb.Cursor()
		for k, v := c.Seek(statePrefix); k != nil && bytes.HasPrefix(k, statePrefix); k, v = c.Next() {
			sv, err := decodeState(k, v)
			if err != nil {
				return &CorruptionError{Path: w.path, Err: err}
			}
			if sv.seq >= before || sv.seq < from || sv.seq <= cleared || sv.flags&stateAside != 0 {
				continue
			}
			e := Entry{Seq: sv.seq, Data: bytes.Clone(sv.data)}
			entryAt(&e, sv.at, boot)
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("wal: read the state in %s: %w", w.path, err)
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// stateCleared returns the sequence of the newest clear, 0 if none.
func stateCleared(mb *bolt.Bucket) uint64 {
	v := mb.Get(stateClearKey)
	if v == nil {
		return 0
	}
	n, err := metaUint(stateClearKey, v)
	if err != nil {
		return 0 // damage: salvage keeps the newest sound copy
	}
	return n
}

// SetStateAside marks event seq, set aside as poison, as never to be given
// out by State: if it is its key's newest, the key is left out until a
// newer event renews it. It commits a small transaction, synced as appends
// are.
func (w *WAL) SetStateAside(seq uint64) error {
	return w.locked(func() error {
		err := w.metaTx(true, func(mb *bolt.Bucket) error {
			c := mb.Cursor()
			for k, v := c.Seek(statePrefix); k != nil && bytes.HasPrefix(k, statePrefix); k, v = c.Next() {
				sv, err := decodeState(k, v)
				if err != nil || sv.seq != seq {
					continue
				}
				name := bytes.Clone(k)
				return mb.Put(name, encodeState(name, seq, stateAside, sv.at, sv.data))
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("wal: mark event %d set aside in the state of %s: %w", seq, w.path, err)
		}
		return nil
	})
}

// countState counts the keys the state holds and their bytes.
func countState(mb *bolt.Bucket) (keys uint64, size int64) {
	c := mb.Cursor()
	for k, v := c.Seek(statePrefix); k != nil && bytes.HasPrefix(k, statePrefix); k, v = c.Next() {
		keys++
		size += int64(len(k) + len(v))
	}
	return keys, size
}
