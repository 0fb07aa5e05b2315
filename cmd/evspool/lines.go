package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/evspool/evspool/emitter"
)

const (
	maxBatchEvents = 1000
	maxBatchBytes  = 1 << 20
)

// batchBytes bounds the events of a batch for a spool capped at maxSpool.
// The spool refuses a commit that costs more than it can hold, whole,
// whatever --on-full says (the events are lost). A small event costs at
// most about twice its size (its share of a page), a large one its size
// and a page: a sixteenth of the cap, plus the line that closes the batch
// (at most a quarter: --max-event-size), costs at most about three eighths
// of the cap, below the least the spool gives its events (about seven
// sixteenths, once it lowered its budget for a file that outgrew the cap).
func batchBytes(maxSpool int64) int { return int(min(maxBatchBytes, maxSpool/16)) }

// readLines reads events from r, one per line, and sends them in batches:
// a batch closes when no more input is buffered, so a slow producer's events
// go out one by one and a fast one's in groups (one spool commit each). A
// batch holds at most maxBatchEvents events, and closes once it holds
// maxBatch bytes or more (see batchBytes). A line over maxEvent (its
// newline included) is skipped without holding it in memory and handed to
// refuse, with an error that says how big it was (the emitter counts it
// lost and logs it). The channel is closed at end of input, and once stop
// is closed: then the lines read so far are handed over (for at most
// stopGrace) and no more is read.
func readLines(r io.Reader, maxEvent, maxBatch int, out chan<- [][]byte, stop <-chan struct{}, refuse func(error), logger *slog.Logger) {
	defer close(out)
	br := bufio.NewReaderSize(r, max(maxEvent, 64<<10))
	var batch [][]byte
	size := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxEvent {
			n := len(line)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				n += len(line)
			}
			refuse(&emitter.EventSizeError{Size: n, Limit: maxEvent})
			line = nil
		}
		if len(line) > 0 {
			if ev, verr := emitter.Validate(line, maxEvent); verr != nil {
				refuse(verr)
			} else {
				batch = append(batch, bytes.Clone(ev))
				size += len(ev)
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				logger.Error("reading stdin failed; treating it as end of input", "error", err)
			}
			if len(batch) > 0 {
				out <- batch
			}
			return
		}
		if stopped(stop) {
			handOver(out, batch)
			return
		}
		if len(batch) > 0 && (br.Buffered() == 0 || len(batch) >= maxBatchEvents || size >= maxBatch) {
			select {
			case out <- batch:
			case <-stop:
				handOver(out, batch)
				return
			}
			batch, size = nil, 0
		}
	}
}

// stopGrace bounds the hand-over of the last lines read once reading stops.
const stopGrace = 200 * time.Millisecond

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// handOver gives the last batch read to pump, which takes what is left for
// stopGrace after the stop.
func handOver(out chan<- [][]byte, batch [][]byte) {
	if len(batch) == 0 {
		return
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case out <- batch:
	case <-t.C:
	}
}
