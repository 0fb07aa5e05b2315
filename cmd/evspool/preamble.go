package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/evspool/evspool/emitter"
)

// linesFlag is a repeatable flag: each use adds a line (--preamble).
type linesFlag struct{ lines *[]string }

func (f linesFlag) String() string {
	if f.lines == nil {
		return ""
	}
	return strings.Join(*f.lines, " | ")
}

func (f linesFlag) Set(s string) error {
	*f.lines = append(*f.lines, s)
	return nil
}

// checkDropIn validates --max-age, and the --preamble lines like events: no
// newline in them, each within --max-event-size.
func (r *runFlags) checkDropIn() error {
	if r.maxAge < 0 {
		return fmt.Errorf("--max-age must be positive (or 0 for off), not %v", r.maxAge)
	}
	for i, l := range r.preamble {
		if bytes.IndexByte([]byte(l), '\n') >= 0 {
			return fmt.Errorf("--preamble #%d contains a newline: give each line its own --preamble", i+1)
		}
		if _, err := emitter.Validate([]byte(l), int(r.maxEvent)); err != nil {
			return fmt.Errorf("--preamble #%d: %w", i+1, err)
		}
	}
	return nil
}

// preambleFunc writes the --preamble lines first on every connection, in one
// write; nil when there are none.
func preambleFunc(lines []string) emitter.PreambleFunc {
	if len(lines) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l)
		buf.WriteByte('\n')
	}
	b := buf.Bytes()
	return func(_ context.Context, w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}
