package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/evspool/evspool/wal"
)

// DeadLetterFile holds the events set aside as poison; DeadLetterFile+".1"
// the previous generation.
const DeadLetterFile = "dead-letters"

// DefaultMaxDeadLetterBytes is the size at which the dead-letter file rotates.
const DefaultMaxDeadLetterBytes = 16 << 20

// deadLetterMagic starts every record's header line.
const deadLetterMagic = "#evspool-dead-letter"

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
	rec := append([]byte(deadLetterMagic+" "+FormatDeadLetter(dl)+"\n"), dl.Data...)
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

// ReadDeadLetters returns the dead letters kept in dir, oldest first. A
// record torn at the end of a file is skipped: its event was still in the
// spool, so it was delivered or set aside again.
func ReadDeadLetters(dir string) ([]DeadLetter, error) {
	var out []DeadLetter
	for _, name := range []string{DeadLetterFile + ".1", DeadLetterFile} {
		f, err := wal.OpenFile(dir, name, os.O_RDONLY)
		var pe *os.PathError // the file missing, not the directory
		if errors.As(err, &pe) && pe.Path == filepath.Join(dir, name) && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ledger: read dead letters: %w", err)
		}
		dls, err := parseDeadLetters(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("ledger: dead-letter file %s: %w", filepath.Join(dir, name), err)
		}
		out = append(out, dls...)
	}
	return out, nil
}

func parseDeadLetters(r io.Reader) ([]DeadLetter, error) {
	br := bufio.NewReader(r)
	var out []DeadLetter
	for n := 1; ; n++ {
		header, err := br.ReadString('\n')
		if err == io.EOF {
			return out, nil // a torn header at the end is skipped
		}
		if err != nil {
			return out, err
		}
		dl, size, err := parseDeadLetterHeader(strings.TrimSuffix(header, "\n"))
		if err != nil {
			return out, fmt.Errorf("record %d: %w", n, err)
		}
		body := make([]byte, size+1)
		if _, err := io.ReadFull(br, body); err != nil {
			return out, nil // torn at the end
		}
		if body[size] != '\n' {
			return out, fmt.Errorf("record %d (seq %d): no newline after its %d bytes", n, dl.Seq, size)
		}
		dl.Data = body[:size]
		out = append(out, dl)
	}
}

func parseDeadLetterHeader(h string) (DeadLetter, int, error) {
	var dl DeadLetter
	fields := strings.Fields(h)
	if len(fields) == 0 || fields[0] != deadLetterMagic {
		return dl, 0, fmt.Errorf("header %.60q does not start with %s", h, deadLetterMagic)
	}
	size := -1
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		var err error
		switch k {
		case "seq":
			dl.Seq, err = strconv.ParseUint(v, 10, 64)
		case "appended":
			dl.Appended, err = time.Parse(time.RFC3339Nano, v)
		case "at":
			dl.At, err = time.Parse(time.RFC3339Nano, v)
		case "attempts":
			dl.Attempts, err = strconv.Atoi(v)
		case "len":
			size, err = strconv.Atoi(v)
		}
		if err != nil {
			return dl, 0, fmt.Errorf("header field %q: %w", f, err)
		}
	}
	if size < 0 || size > 1<<30 {
		return dl, 0, fmt.Errorf("header %.60q has no valid len", h)
	}
	return dl, size, nil
}

// FormatDeadLetter is dl's header line as AppendDeadLetter writes it.
func FormatDeadLetter(dl DeadLetter) string {
	return fmt.Sprintf("seq=%d appended=%s at=%s attempts=%d len=%d", dl.Seq,
		dl.Appended.UTC().Format(time.RFC3339Nano), dl.At.UTC().Format(time.RFC3339Nano), dl.Attempts, len(dl.Data))
}
