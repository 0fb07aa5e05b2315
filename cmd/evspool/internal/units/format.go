package units

import (
	"strconv"
	"strings"
)

// formatUnits are the units FormatSize may print, binary first so that it
// wins a tie.
var formatUnits = []struct {
	name string
	size int64
}{
	{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB},
	{"TB", TB}, {"GB", GB}, {"MB", MB}, {"KB", KB},
}

// FormatSize prints n bytes exactly, in the unit that needs the fewest
// digits (binary units win ties), with at most three decimal places:
// "64MiB", "1.5GiB", "1.5KB", "1MB", "1000001B". ParseSize reads the result
// back to n. A negative n prints as bytes ("-5B"), which ParseSize refuses.
func FormatSize(n int64) string {
	best, unit := strconv.FormatInt(n, 10), "B"
	if n <= 0 {
		return best + unit
	}
	for _, u := range formatUnits {
		if s, ok := exactIn(n, u.size); ok && len(s) < len(best) {
			best, unit = s, u.name
		}
	}
	return best + unit
}

// exactIn writes n/size with at most three decimals, if that is exact and
// at least 1.
func exactIn(n, size int64) (string, bool) {
	q, r := n/size, n%size
	if q == 0 || (r*1000)%size != 0 { // r < 2^40, so r*1000 cannot overflow
		return "", false
	}
	s := strconv.FormatInt(q, 10)
	if r == 0 {
		return s, true
	}
	milli := strconv.FormatInt(r*1000/size+1000, 10)[1:] // zero-padded to 3
	return s + "." + strings.TrimRight(milli, "0"), true
}
