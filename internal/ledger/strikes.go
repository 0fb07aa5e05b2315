package ledger

import (
	"encoding/binary"
	"errors"

	"github.com/evspool/evspool/wal"
)

// keyStrikes is the spool value that holds the Strikes.
const keyStrikes = "poison_strikes"

// Strikes is the emitter's record of the one event it suspects of making the
// receiver fail: its strikes, and the event before it (the witness), which
// the receiver handled and the next process can resend as proof the receiver
// works. Kept in the spool so that strikes count across restarts.
type Strikes struct {
	Seq        uint64 // the suspect; 0: none
	Count      int    // its strikes
	WitnessSeq uint64 // the event before it; 0: none kept
	Witness    []byte // its bytes
}

// errStrikesFormat is a strike record that cannot be decoded.
var errStrikesFormat = errors.New("ledger: strike record is damaged")

func (s Strikes) encode() []byte {
	b := make([]byte, 0, 24+len(s.Witness))
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
	s.Witness = b[24:]
	return s, nil
}

// LoadStrikes returns the strike record saved in spool; the zero Strikes if
// none, or if the suspect has left the spool since.
func LoadStrikes(spool *wal.WAL) (Strikes, error) {
	v, err := spool.Value(keyStrikes)
	if err != nil || v == nil {
		return Strikes{}, err
	}
	s, err := decodeStrikes(v)
	if err != nil {
		return Strikes{}, nil // a lost strike count is a few more attempts
	}
	if first := spool.FirstSeq(); first == 0 || s.Seq < first {
		return Strikes{}, nil
	}
	return s, nil
}

// SaveStrikes saves s in spool; the zero Strikes clears the record.
func SaveStrikes(spool *wal.WAL, s Strikes) error {
	var v []byte
	if s.Seq != 0 {
		v = s.encode()
	}
	return spool.SetValues(map[string][]byte{keyStrikes: v})
}
