package units_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/cmd/evspool/internal/units"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   string
		want int64
	}{
		"plain bytes":        {"1048576", 1 << 20},
		"zero":               {"0", 0},
		"bytes unit":         {"512B", 512},
		"KiB":                {"64KiB", 64 << 10},
		"MiB":                {"64MiB", 64 << 20},
		"GiB":                {"2GiB", 2 << 30},
		"TiB":                {"1TiB", 1 << 40},
		"KB":                 {"512KB", 512_000},
		"MB":                 {"64MB", 64_000_000},
		"GB":                 {"3GB", 3_000_000_000},
		"TB":                 {"1TB", 1_000_000_000_000},
		"bare K is binary":   {"4K", 4096},
		"bare M is binary":   {"64M", 64 << 20},
		"bare G is binary":   {"1G", 1 << 30},
		"bare T is binary":   {"1T", 1 << 40},
		"Kubernetes Mi":      {"64Mi", 64 << 20},
		"lowercase":          {"64mib", 64 << 20},
		"uppercase":          {"64MIB", 64 << 20},
		"lowercase decimal":  {"64mb", 64_000_000},
		"space before unit":  {"64 MiB", 64 << 20},
		"tab before unit":    {"64\tMiB", 64 << 20},
		"surrounding spaces": {"  64MiB \n", 64 << 20},
		"decimal":            {"1.5GiB", 3 << 29},
		"decimal KB":         {"1.024KB", 1024},
		"fraction dropped":   {"1.1KiB", 1126},
		"whole with .0":      {"1.0", 1},
		"leading zeros":      {"007MiB", 7 << 20},
		"max int64":          {"9223372036854775807", math.MaxInt64},
		"largest TiB":        {"8388607TiB", 8388607 << 40},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := units.ParseSize(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseSizeErrors(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in     string
		want   error
		saying string
	}{
		"empty":            {"", units.ErrEmpty, "no value"},
		"blank":            {"   ", units.ErrEmpty, "no value"},
		"negative":         {"-1MiB", units.ErrNegative, "negative"},
		"overflow":         {"9223372036854775808", units.ErrOverflow, "largest size"},
		"overflow by unit": {"8388608TiB", units.ErrOverflow, "largest size"},
		"huge":             {"99999999999999999999999999999999GB", units.ErrOverflow, "largest size"},
		"unknown unit":     {"64XB", units.ErrUnknownUnit, `unknown unit "XB"`},
		"EiB unsupported":  {"8EiB", units.ErrUnknownUnit, `unknown unit "EiB"`},
		"bits":             {"64Mbit", units.ErrUnknownUnit, "unknown unit"},
		"no number":        {"MiB", units.ErrSyntax, "does not start with a number"},
		"leading dot":      {".5GiB", units.ErrSyntax, "does not start with a number"},
		"trailing dot":     {"1.GiB", units.ErrSyntax, "plain decimal"},
		"exponent":         {"1e6", units.ErrSyntax, "plain decimal"},
		"thousands":        {"1,000", units.ErrSyntax, "plain decimal"},
		"underscore":       {"1_000", units.ErrSyntax, "plain decimal"},
		"two numbers":      {"5 6", units.ErrSyntax, "plain decimal"},
		"plus sign":        {"+5", units.ErrSyntax, "does not start with a number"},
		"fractional byte":  {"1.5", units.ErrSyntax, "whole"},
		"fractional B":     {"0.5B", units.ErrSyntax, "whole"},
		"hex":              {"0x10", units.ErrUnknownUnit, "unknown unit"},
		"too long":         {strings.Repeat("1", 80), units.ErrSyntax, "longer than"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := units.ParseSize(tc.in)
			require.ErrorIs(t, err, tc.want)
			var pe *units.ParseError
			require.True(t, errors.As(err, &pe))
			assert.Equal(t, "size", pe.Kind)
			assert.Equal(t, tc.in, pe.Input)
			assert.Contains(t, err.Error(), tc.saying)
			assert.Contains(t, err.Error(), "64MiB", "the error shows a good value")
		})
	}
}

func TestFormatSize(t *testing.T) {
	t.Parallel()
	tests := map[int64]string{
		0:             "0B",
		1:             "1B",
		100:           "100B",
		1000:          "1KB",
		1024:          "1KiB",
		1500:          "1.5KB",
		1536:          "1.5KiB",
		1_000_000:     "1MB",
		1_024_000:     "1000KiB",
		64 << 20:      "64MiB",
		3 << 29:       "1.5GiB",
		1_500_000_000: "1.5GB",
		1<<30 + 1<<20: "1025MiB",
		1 << 40:       "1TiB",
		1_000_001:     "1000001B",
		1_234_567:     "1234567B",
		1_234_500:     "1234.5KB",
		math.MaxInt64: "9223372036854775807B",
		-5:            "-5B",
		math.MinInt64: "-9223372036854775808B",
	}
	for n, want := range tests {
		assert.Equal(t, want, units.FormatSize(n), "FormatSize(%d)", n)
		if n >= 0 {
			back, err := units.ParseSize(want)
			require.NoError(t, err)
			assert.Equal(t, n, back, "round trip of %q", want)
		}
	}
}
