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
			return nil, fmt.Errorf("dead-letter file %s: %w", filepath.Join(dir, name), err)
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
	if len(fields) == 0 || fields[0] != DeadLetterMagic {
		return dl, 0, fmt.Errorf("header %.60q does not start with %s", h, DeadLetterMagic)
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
