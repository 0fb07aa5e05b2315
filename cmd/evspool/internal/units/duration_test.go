package units_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/cmd/evspool/internal/units"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		want time.Duration
	}{
		"seconds":        {"5s", 5 * time.Second},
		"compound":       {"1m30s", 90 * time.Second},
		"milliseconds":   {"250ms", 250 * time.Millisecond},
		"micro":          {"50µs", 50 * time.Microsecond},
		"fraction":       {"1.5h", 90 * time.Minute},
		"zero":           {"0", 0},
		"zero seconds":   {"0s", 0},
		"plus sign":      {"+5s", 5 * time.Second},
		"spaces trimmed": {" 2s\n", 2 * time.Second},
		"largest":        {"2562047h47m16.854775807s", time.Duration(1<<63 - 1)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := units.ParseDuration(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseDurationErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in     string
		want   error
		saying string
	}{
		"empty":        {"", units.ErrEmpty, "no value"},
		"negative":     {"-1s", units.ErrNegative, "negative"},
		"negative 0":   {"-0s", units.ErrNegative, "negative"},
		"bare number":  {"5", units.ErrSyntax, "did you mean 5s?"},
		"trailing num": {"1h5", units.ErrSyntax, "without a unit"},
		"unknown unit": {"5d", units.ErrUnknownUnit, "use ns, us, ms, s, m or h"},
		"overflow":     {"9999999999h", units.ErrOverflow, "largest duration"},
		"garbage":      {"soon", units.ErrSyntax, "not a duration"},
		"double dot":   {"1..5s", units.ErrSyntax, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := units.ParseDuration(tc.in)
			require.ErrorIs(t, err, tc.want)
			var pe *units.ParseError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, "duration", pe.Kind)
			assert.Contains(t, err.Error(), tc.saying)
			assert.Contains(t, err.Error(), "1m30s", "the error shows a good value")
		})
	}
}
