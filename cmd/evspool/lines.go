package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"

	"github.com/evspool/evspool/emitter"
)

const (
	maxBatchEvents = 1000
	maxBatchBytes  = 1 << 20
)

// readLines reads events from r, one per line, and sends them in batches:
// a batch closes when no more input is buffered, so a slow producer's events
// go out one by one and a fast one's in groups (one spool commit each). A
// line over maxEvent (its newline included) is refused with a warning that
// says how big it was, and skipped without holding it in memory. The channel
// is closed at end of input.
func readLines(r io.Reader, maxEvent int, out chan<- [][]byte, logger *slog.Logger) {
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
			logger.Warn("event refused: line over the size limit, skipped",
				"size", n, "limit", maxEvent, "hint", "raise --max-event-size or split the line")
			line = nil
		}
		if len(line) > 0 {
			if ev, verr := emitter.Validate(line, maxEvent); verr != nil {
				logger.Warn("event refused", "error", verr)
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
		if len(batch) > 0 && (br.Buffered() == 0 || len(batch) >= maxBatchEvents || size >= maxBatchBytes) {
			out <- batch
			batch, size = nil, 0
		}
	}
}
