package ledger

import (
	"encoding/binary"
	"errors"

	"github.com/evspool/evspool/wal"
)

// keyStrikes is the spool value that holds the Strikes.
const keyStrikes = "poison_strikes"

// Strikes is the emitter's record of the one event it suspects of making the
// receiver fail, and its strikes; and of the newest event the receiver
// handled (the witness), which the next process can resend as proof the
// receiver works, suspect or not. Kept in the spool so that strikes count,
// and a poison event can be blamed, across restarts.
type Strikes struct {
	Seq        uint64 // the suspect; 0: none
	Count      int    // its strikes
	WitnessSeq uint64 // the witness; 0: none kept
	Witness    []byte // its bytes
}

// MaxKeptWitness bounds the witness KeepWitness stores with every
// acknowledgement's commit: a larger one is kept only with a strike.
const MaxKeptWitness = 2 << 10

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
// none; with no suspect if it has left the spool since. The witness is as
// saved: the caller checks that it comes just before the oldest pending.
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
		s.Seq, s.Count = 0, 0
	}
	return s, nil
}

// SaveStrikes saves s in spool, in a commit of its own; the zero Strikes
// clears the record.
func SaveStrikes(spool *wal.WAL, s Strikes) error {
	var v []byte
	if s.Seq != 0 || s.WitnessSeq != 0 {
		v = s.encode()
	}
	return spool.SetValues(map[string][]byte{keyStrikes: v})
}

// KeepWitness saves s, with a new witness, in the spool's next commit
// (wal.StoreLater): no commit of its own, for every acknowledgement. A
// crash before that commit keeps the record saved before.
func KeepWitness(spool *wal.WAL, s Strikes) error {
	return spool.StoreLater(keyStrikes, s.encode())
}
