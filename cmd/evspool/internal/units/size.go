package units

import (
	"math"
	"math/big"
	"strings"
)

// Size multipliers.
const (
	KiB int64 = 1 << (10 * (iota + 1))
	MiB
	GiB
	TiB
)

// Decimal size multipliers.
const (
	KB int64 = 1000
	MB       = 1000 * KB
	GB       = 1000 * MB
	TB       = 1000 * GB
)

// maxSizeLen bounds the input so that the exact arithmetic stays cheap.
const maxSizeLen = 64

// multipliers maps lowercased units to their value in bytes.
var multipliers = map[string]int64{
	"": 1, "b": 1,
	"k": KiB, "ki": KiB, "kib": KiB, "kb": KB,
	"m": MiB, "mi": MiB, "mib": MiB, "mb": MB,
	"g": GiB, "gi": GiB, "gib": GiB, "gb": GB,
	"t": TiB, "ti": TiB, "tib": TiB, "tb": TB,
}

// ParseSize parses a size such as "64MiB", "512 KB", "1.5GiB" or "1048576"
// into bytes. The package doc lists the units. Errors are *ParseError.
func ParseSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	switch {
	case in == "":
		return 0, sizeError(s, ErrEmpty, "no value given")
	case len(in) > maxSizeLen:
		return 0, sizeError(s, ErrSyntax, "longer than %d characters", maxSizeLen)
	case in[0] == '-':
		return 0, sizeError(s, ErrNegative, "a size cannot be negative")
	}
	whole, frac, rest := splitNumber(in)
	if whole == "" {
		return 0, sizeError(s, ErrSyntax, "it does not start with a number")
	}
	unit := strings.TrimLeft(rest, " \t")
	mult, ok := multipliers[strings.ToLower(unit)]
	if !ok {
		return 0, unitError(s, unit)
	}
	if mult == 1 && strings.Trim(frac, "0") != "" {
		return 0, sizeError(s, ErrSyntax, "a number of bytes must be whole")
	}
	n, ok := scale(whole, frac, mult)
	if !ok {
		return 0, sizeError(s, ErrOverflow, "more than the largest size, %d bytes (8EiB)", int64(math.MaxInt64))
	}
	return n, nil
}

// splitNumber splits "1.5 GiB" into "1", "5" and " GiB". whole is empty if
// s does not start with a digit; a '.' must have digits on both sides or it
// is left in rest, where it fails as a unit.
func splitNumber(s string) (whole, frac, rest string) {
	i := digits(s)
	whole, rest = s[:i], s[i:]
	if i > 0 && len(rest) > 1 && rest[0] == '.' {
		if j := digits(rest[1:]); j > 0 {
			frac, rest = rest[1:1+j], rest[1+j:]
		}
	}
	return whole, frac, rest
}

func digits(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// unitError explains a unit that is not in the table: either the number was
// malformed ("1,000", "1e6", "1.") or the unit is unknown ("64XB").
func unitError(s, unit string) error {
	exponent := len(unit) > 1 && (unit[0] == 'e' || unit[0] == 'E') &&
		strings.ContainsRune("+-0123456789", rune(unit[1]))
	if exponent || strings.ContainsRune(".,_'0123456789", rune(unit[0])) {
		return sizeError(s, ErrSyntax, "%q is not part of a plain decimal number", unit)
	}
	return sizeError(s, ErrUnknownUnit, "unknown unit %q", unit)
}

// scale returns floor(whole.frac × mult) exactly, and false if it does not
// fit in an int64.
func scale(whole, frac string, mult int64) (int64, bool) {
	num, _ := new(big.Int).SetString(whole+frac, 10)
	num.Mul(num, big.NewInt(mult))
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(frac))), nil)
	num.Quo(num, den)
	if !num.IsInt64() {
		return 0, false
	}
	return num.Int64(), true
}
