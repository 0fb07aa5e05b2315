package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// deadLetterSummary is what inspect shows of the dead-letter file: events
// the receiver kept failing on, set aside so delivery could go on.
type deadLetterSummary struct {
	Events int       `json:"events"`
	File   string    `json:"file"`
	Newest time.Time `json:"newest,omitempty"`
	Error  string    `json:"error,omitempty"`
}

// summarizeDeadLetters reads the dead-letter file in dir; nil when there is
// none.
func summarizeDeadLetters(dir string) *deadLetterSummary {
	dls, err := ledger.ReadDeadLetters(dir)
	s := &deadLetterSummary{Events: len(dls), File: filepath.Join(dir, ledger.DeadLetterFile)}
	if err != nil {
		s.Error = err.Error()
	} else if len(dls) == 0 {
		return nil
	}
	if len(dls) > 0 {
		s.Newest = dls[len(dls)-1].At.UTC()
	}
	return s
}

// printDeadLetters lists the dead letters in dir, oldest first: a header per
// event and its bytes (quoted if not printable), or with raw only the bytes,
// one event a line, ready to be piped back into 'evspool run'.
func printDeadLetters(w io.Writer, dir string, raw bool) error {
	dls, err := ledger.ReadDeadLetters(dir)
	if errors.Is(err, wal.ErrUnsafeFile) {
		return err // not a file of evspool's: never read
	}
	if err != nil {
		return fmt.Errorf("%w; the records before the damage are still in the file, each after a '#evspool-dead-letter' line", err)
	}
	bw := bufio.NewWriter(w)
	if !raw {
		fmt.Fprintf(bw, "%d dead letters in %s (oldest first; re-inject with --raw | evspool run ...):\n",
			len(dls), filepath.Join(dir, ledger.DeadLetterFile))
	}
	for _, dl := range dls {
		if raw {
			bw.Write(dl.Data)
			bw.WriteByte('\n')
			continue
		}
		fmt.Fprintf(bw, "%s\n\t%s\n", ledger.FormatDeadLetter(dl), printable(string(dl.Data)))
	}
	return bw.Flush()
}
