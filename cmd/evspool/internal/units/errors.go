package units

import (
	"errors"
	"fmt"
)

// Sentinel errors, wrapped by *ParseError.
var (
	ErrEmpty       = errors.New("units: empty value")
	ErrNegative    = errors.New("units: negative value")
	ErrOverflow    = errors.New("units: value too large")
	ErrUnknownUnit = errors.New("units: unknown unit")
	ErrSyntax      = errors.New("units: malformed value")
)

// ParseError tells which value could not be parsed, why, and what a good one
// looks like. It matches one of the sentinel errors with errors.Is.
type ParseError struct {
	// Kind is "size" or "duration".
	Kind string
	// Input is the value as given.
	Input string
	// Reason says what is wrong, for a person.
	Reason string
	// Err is the sentinel: ErrEmpty, ErrNegative, ErrOverflow,
	// ErrUnknownUnit or ErrSyntax.
	Err error
}

// Error implements error.
func (e *ParseError) Error() string {
	return fmt.Sprintf("units: invalid %s %q: %s; %s", e.Kind, e.Input, e.Reason, example(e.Kind))
}

// Unwrap returns the sentinel.
func (e *ParseError) Unwrap() error { return e.Err }

func example(kind string) string {
	if kind == "duration" {
		return "want a non-negative duration such as 500ms, 5s, 1m30s or 2h"
	}
	return "want a number of bytes with an optional unit such as 1048576, 512KB, 64MiB or 1.5GiB " +
		"(units: B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
}

func sizeError(input string, err error, format string, args ...any) error {
	return &ParseError{Kind: "size", Input: input, Reason: fmt.Sprintf(format, args...), Err: err}
}

func durationError(input string, err error, format string, args ...any) error {
	return &ParseError{Kind: "duration", Input: input, Reason: fmt.Sprintf(format, args...), Err: err}
}
