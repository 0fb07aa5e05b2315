package main

import (
	"strconv"
	"time"
)

// Every event is exactly eventSize bytes (plus the newline on the wire):
//
//	P<producer:2> S<sequence:10> T<emit time, unix ns:19> <PTP-shaped filler>
//
// The fixed layout lets the receiver side parse a line without allocating.
const (
	eventSize = 100
	prodOff   = 1
	seqOff    = 5
	seqLen    = 10
	timeOff   = 17
	timeLen   = 19
	headLen   = timeOff + timeLen + 1

	// genStride separates the sequence numbers of successive emitter
	// processes in the SIGKILL scenario: generation g starts at g*genStride.
	genStride = 100_000_000
)

// filler is a real-shaped linuxptp line, cut to fill the event.
const filler = "ptp4l[365195.391]: [ptp4l.0.config] master offset -1 s2 freq -3972 path delay 89 ..........."

// appendEvent appends producer prod's event seq, stamped now, to dst.
func appendEvent(dst []byte, prod int, seq uint64) []byte {
	start := len(dst)
	dst = append(dst, 'P')
	dst = appendPadded(dst, uint64(prod), 2)
	dst = append(dst, ' ', 'S')
	dst = appendPadded(dst, seq, seqLen)
	dst = append(dst, ' ', 'T')
	dst = appendPadded(dst, uint64(time.Now().UnixNano()), timeLen)
	dst = append(dst, ' ')
	return append(dst, filler[:eventSize-(len(dst)-start)]...)
}

func appendPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	s := strconv.AppendUint(buf[:0], v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// eventTail is what follows the time stamp in every event.
var eventTail = " " + filler[:eventSize-timeOff-timeLen-1]

// parseEvent reads the header of a received line. ok is false for a line
// that is not one of ours, byte for byte (a torn write, say, or a line a
// contender altered).
func parseEvent(line []byte) (prod int, seq uint64, emitNs int64, ok bool) {
	if len(line) != eventSize || line[0] != 'P' || line[seqOff-1] != 'S' || line[timeOff-1] != 'T' ||
		string(line[timeOff+timeLen:]) != eventTail {
		return 0, 0, 0, false
	}
	p, ok1 := digits(line[prodOff : prodOff+2])
	s, ok2 := digits(line[seqOff : seqOff+seqLen])
	t, ok3 := digits(line[timeOff : timeOff+timeLen])
	return int(p), s, int64(t), ok1 && ok2 && ok3
}

func digits(b []byte) (uint64, bool) {
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	return v, true
}
