package main

import (
	"fmt"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

// writebackEvery is how often the writeback receiver writes a line back.
const writebackEvery = 10

// WritebackRow is one contender against a v2 receiver that writes a line
// back after every writebackEvery lines it handles, with blocking writes: a
// sender that never reads stalls it once the buffers are full.
type WritebackRow struct {
	Contender string `json:"contender"`
	Sent      int    `json:"sent"`
	Handled   int    `json:"handled"`
	Written   int    `json:"written_back"` // lines the receiver wrote, status requests included
	// Received counts the lines the embedder was handed (OnReceive), for
	// the in-process library; -1 where nobody is handed them.
	Received int64   `json:"received_by_embedder"`
	Dropped  uint64  `json:"dropped_by_contender"`
	Rate     float64 `json:"rate"`
	Seconds  float64 `json:"seconds"` // from the first line to the last one handled
	Error    string  `json:"error,omitempty"`
}

// runWriteback sends n messages at rate, each a change (so that a sender
// that drops unchanged values sends them all), and counts what the
// receiver handled once it has handled nothing for quiet.
func runWriteback(tmp string, bins evspoolBins, contender string, n int, rate float64, quiet time.Duration) WritebackRow {
	row := WritebackRow{Contender: contender, Rate: rate, Received: -1}
	if err := row.run(tmp, bins, n, quiet); err != nil {
		row.Error = err.Error()
	}
	return row
}

func (row *WritebackRow) run(tmp string, bins evspoolBins, n int, quiet time.Duration) error {
	v, s, stop, err := startStatePair(tmp, "wb", &refrecv.V2Options{WriteBackEvery: writebackEvery}, row.Contender, bins)
	if err != nil {
		return err
	}
	defer stop()
	every := time.Duration(float64(time.Second) / row.Rate)
	start := time.Now()
	for i := range n {
		sleepUntilNs(start.Add(time.Duration(i) * every).UnixNano())
		if err := s.send(changeLine(i, time.Now())); err != nil {
			return err
		}
		row.Sent++
	}
	waitQuiet(v, quiet, 60*time.Second)
	row.Seconds = time.Since(start).Seconds() - quiet.Seconds()
	row.Handled, row.Written, row.Dropped = v.Lines(), v.Written(), s.dropped()
	if lib, ok := s.(*evspoolLib); ok {
		row.Received = lib.receivedBack()
	}
	return nil
}

// changeLine is message i of a stream in which every message changes its
// key: four interfaces' ptp_state, each flipping between LOCKED and
// HOLDOVER.
func changeLine(i int, now time.Time) []byte {
	state := [2]string{"LOCKED", "HOLDOVER"}[(i/4)%2]
	ts := now.UTC().Add(time.Duration(i) * time.Nanosecond).Format(time.RFC3339Nano)
	return fmt.Appendf(nil, `{"version":1,"type":"ptp_state","timestamp":%q,"profile":"ptp4l.0.config","iface":"ens%df%d","values":{"state":%q}}`,
		ts, 1+(i%4)/2, i%2, state)
}
