package units

import (
	"strings"
	"time"
)

// durationUnits are the units time.ParseDuration knows.
var durationUnits = []string{"ns", "us", "µs", "μs", "ms", "s", "m", "h"}

// ParseDuration parses a duration the way time.ParseDuration does ("500ms",
// "5s", "1m30s", "0"), refusing negative values (even "-0s") and explaining
// mistakes. Errors are *ParseError.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	switch {
	case in == "":
		return 0, durationError(s, ErrEmpty, "no value given")
	case in[0] == '-':
		return 0, durationError(s, ErrNegative, "a duration cannot be negative")
	}
	d, err := time.ParseDuration(in)
	if err == nil {
		return d, nil
	}
	msg := err.Error()
	switch {
	case digits(in) == len(in):
		return 0, durationError(s, ErrSyntax, "missing unit (did you mean %ss?)", in)
	case strings.Contains(msg, "missing unit"):
		return 0, durationError(s, ErrSyntax, "a number without a unit")
	case strings.Contains(msg, "unknown unit"):
		return 0, durationError(s, ErrUnknownUnit, "unknown unit; use ns, us, ms, s, m or h")
	case wellFormed(strings.TrimPrefix(in, "+")):
		return 0, durationError(s, ErrOverflow, "more than the largest duration, %v", time.Duration(1<<63-1))
	}
	return 0, durationError(s, ErrSyntax, "not a duration")
}

// wellFormed reports whether s follows time.ParseDuration's grammar, one or
// more of number and unit, so that a failure to parse it means overflow.
func wellFormed(s string) bool {
	for s != "" {
		whole := digits(s)
		s = s[whole:]
		frac := 0
		if s != "" && s[0] == '.' {
			frac = digits(s[1:])
			s = s[1+frac:]
		}
		if whole+frac == 0 {
			return false
		}
		unit := ""
		for _, u := range durationUnits {
			if strings.HasPrefix(s, u) && len(u) > len(unit) {
				unit = u
			}
		}
		if unit == "" {
			return false
		}
		s = s[len(unit):]
	}
	return true
}
