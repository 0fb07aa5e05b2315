package units_test

import (
	"errors"
	"testing"

	"github.com/evspool/evspool/cmd/evspool/internal/units"
)

// sentinels are the errors a ParseError may wrap.
var sentinels = []error{units.ErrEmpty, units.ErrNegative, units.ErrOverflow, units.ErrUnknownUnit, units.ErrSyntax}

func checkParseError(t *testing.T, in string, err error) {
	t.Helper()
	var pe *units.ParseError
	if !errors.As(err, &pe) || pe.Input != in {
		t.Fatalf("error for %q is not a *ParseError with the input: %#v", in, err)
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error for %q wraps no sentinel: %v", in, err)
}

// FuzzParseSize checks that ParseSize never panics, never returns a negative
// size, explains every refusal, and that FormatSize of a result parses back.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64MiB", "1.5GiB", "1048576", "512 kb", "-1", "", "1e6", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		n, err := units.ParseSize(in)
		if err != nil {
			checkParseError(t, in, err)
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d", in, n)
		}
		out := units.FormatSize(n)
		back, err := units.ParseSize(out)
		if err != nil || back != n {
			t.Fatalf("ParseSize(%q) = %d; FormatSize = %q; parses back to %d, %v", in, n, out, back, err)
		}
	})
}

// FuzzFormatSize checks the round trip from the other side.
func FuzzFormatSize(f *testing.F) {
	for _, n := range []int64{0, 1, 1000, 1536, 64 << 20, 1<<63 - 1, -1} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		out := units.FormatSize(n)
		back, err := units.ParseSize(out)
		switch {
		case n < 0 && err == nil:
			t.Fatalf("FormatSize(%d) = %q parses", n, out)
		case n >= 0 && (err != nil || back != n):
			t.Fatalf("FormatSize(%d) = %q parses back to %d, %v", n, out, back, err)
		}
	})
}

// FuzzParseDuration checks that ParseDuration never panics, never returns a
// negative duration, explains every refusal, and that String of a result
// parses back.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"5s", "1m30s", "0", "-1s", "5", "9999999999h", "1.5µs"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		d, err := units.ParseDuration(in)
		if err != nil {
			checkParseError(t, in, err)
			return
		}
		if d < 0 {
			t.Fatalf("ParseDuration(%q) = %v", in, d)
		}
		back, err := units.ParseDuration(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDuration(%q) = %v; parses back to %v, %v", in, d, back, err)
		}
	})
}
