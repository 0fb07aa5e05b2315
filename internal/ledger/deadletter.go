package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/evspool/evspool/wal"
)

// DeadLetterFile holds the events set aside as poison; DeadLetterFile+".1"
// the previous generation.
const DeadLetterFile = "dead-letters"

// DefaultMaxDeadLetterBytes is the size at which the dead-letter file rotates.
const DefaultMaxDeadLetterBytes = 16 << 20

// DeadLetterMagic starts every record's header line (ReadDeadLetters
// reads the file).
const DeadLetterMagic = "#evspool-dead-letter"

// DeadLetter is one event set aside.
type DeadLetter struct {
	Seq      uint64    // its sequence number in the spool
	Appended time.Time // when it was appended to the spool
	At       time.Time // when it was set aside
	Attempts int       // deliveries it was in when the receiver failed
	Data     []byte    // the event's bytes, exactly
}

// AppendDeadLetter appends dl to the dead-letter file in dir and fsyncs it.
// A file that would outgrow maxBytes (0 means DefaultMaxDeadLetterBytes) is
// first renamed to DeadLetterFile+".1", replacing the older generation.
// The record is a header line, then the event's exact bytes and a newline:
//
//	#evspool-dead-letter seq=N appended=RFC3339 at=RFC3339 attempts=N len=N
//
// Synced before the caller removes the event from the spool, so a crash
// makes a duplicate here, never a loss.
func AppendDeadLetter(dir string, dl DeadLetter, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxDeadLetterBytes
	}
	path := filepath.Join(dir, DeadLetterFile)
	rec := append([]byte(DeadLetterMagic+" "+FormatDeadLetter(dl)+"\n"), dl.Data...)
	rec = append(rec, '\n')
	f, err := wal.OpenFile(dir, DeadLetterFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND)
	if err != nil {
		return fmt.Errorf("ledger: open dead-letter file: %w", err)
	}
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size()+int64(len(rec)) > maxBytes {
		f.Close()
		if err := wal.Rename(dir, DeadLetterFile, DeadLetterFile+".1"); err != nil {
			return fmt.Errorf("ledger: rotate dead-letter file %s: %w", path, err)
		}
		if f, err = wal.OpenFile(dir, DeadLetterFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND|os.O_EXCL); err != nil {
			return fmt.Errorf("ledger: open dead-letter file: %w", err)
		}
	}
	_, err = f.Write(rec)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("ledger: write dead-letter file %s: %w", path, err)
	}
	return nil
}

// FormatDeadLetter is dl's header line as AppendDeadLetter writes it.
func FormatDeadLetter(dl DeadLetter) string {
	return fmt.Sprintf("seq=%d appended=%s at=%s attempts=%d len=%d", dl.Seq,
		dl.Appended.UTC().Format(time.RFC3339Nano), dl.At.UTC().Format(time.RFC3339Nano), dl.Attempts, len(dl.Data))
}
