package wal

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// keyStrikes holds the emitter's record of a suspected poison event (see
// Strikes). It is not 8 bytes long, like every meta key (see meta.go).
var keyStrikes = []byte("poison_strikes")

// Strikes is the emitter's record of the one event it suspects of making the
// receiver fail: how many failures it was the culprit of, and the event
// before it (the witness), which the receiver handled, so that the next
// process can resend it as proof that the receiver works. Kept in the spool
// so that a restarted process does not start counting again: a line that
// makes the receiver fail is set aside after MaxAttempts failures in all,
// not MaxAttempts per process.
type Strikes struct {
	Seq        uint64 // the suspect; 0: none
	Count      int    // its strikes
	WitnessSeq uint64 // the event before it; 0: none kept
	Witness    []byte // its bytes
}

// errStrikesFormat is a strike record that cannot be decoded.
var errStrikesFormat = errors.New("wal: strike record is damaged")

func (s Strikes) encode() []byte {
	b := make([]byte, 0, 28+len(s.Witness))
	b = binary.BigEndian.AppendUint64(b, s.Seq)
	b = binary.BigEndian.AppendUint32(b, uint32(s.Count))
	b = binary.BigEndian.AppendUint64(b, s.WitnessSeq)
	b = binary.BigEndian.AppendUint32(b, uint32(len(s.Witness)))
	return append(b, s.Witness...)
}

func decodeStrikes(b []byte) (Strikes, error) {
	if len(b) < 24 {
		return Strikes{}, errStrikesFormat
	}
	s := Strikes{Seq: binary.BigEndian.Uint64(b), Count: int(binary.BigEndian.Uint32(b[8:])),
		WitnessSeq: binary.BigEndian.Uint64(b[12:])}
	n := int(binary.BigEndian.Uint32(b[20:]))
	if len(b) != 24+n {
		return Strikes{}, errStrikesFormat
	}
	s.Witness = append([]byte(nil), b[24:]...)
	return s, nil
}

// Strikes returns the strike record the emitter last saved; the zero
// Strikes if none, or if the suspect has left the spool since (delivered,
// dropped, expired, set aside).
func (w *WAL) Strikes() (Strikes, error) {
	if err := w.usable(); err != nil {
		return Strikes{}, err
	}
	var s Strikes
	err := w.viewMeta(func(mb *bolt.Bucket) error {
		v, ok, err := getMeta(mb, keyStrikes)
		if err != nil || !ok {
			return err
		}
		s, err = decodeStrikes(v)
		return err
	})
	if errors.Is(err, errStrikesFormat) {
		return Strikes{}, nil // a lost strike count is a few more attempts
	}
	if err != nil {
		return Strikes{}, fmt.Errorf("wal: read strikes in %s: %w", w.path, err)
	}
	if first := w.FirstSeq(); first == 0 || s.Seq < first {
		return Strikes{}, nil
	}
	return s, nil
}

// SetStrikes saves s (the zero Strikes clears the record), in a transaction
// of its own: it is rare (a receiver failing on an event).
func (w *WAL) SetStrikes(s Strikes) error {
	if err := w.usable(); err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	err := w.updateMeta(func(mb *bolt.Bucket) error { return putStrikes(mb, s) })
	if err != nil {
		return fmt.Errorf("wal: save strikes in %s: %w", w.path, err)
	}
	return nil
}

func putStrikes(mb *bolt.Bucket, s Strikes) error {
	if s.Seq == 0 {
		return mb.Delete(keyStrikes)
	}
	return putMeta(mb, keyStrikes, s.encode())
}

// copyStrikes carries the strike record into a compacted copy: the stored
// value as it is, its checksum covering the same key.
func copyStrikes(src *bolt.Tx, dst *bolt.Tx) error {
	v := src.Bucket(metaBucket).Get(keyStrikes)
	if v == nil {
		return nil
	}
	return dst.Bucket(metaBucket).Put(keyStrikes, append([]byte(nil), v...))
}
