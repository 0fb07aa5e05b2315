// Package testmode says how long the tests should run. `make test` runs the
// short versions, a few seconds each at most; `make torture` sets
// EVSPOOL_TORTURE=long and runs the same tests at full length (every page
// of a file damaged rather than a sample, more random sequences, bigger
// spools). Nothing that tests a promise exists only in the long version.
package testmode

import "os"

// Long reports whether EVSPOOL_TORTURE=long asks for the full-length runs.
func Long() bool { return os.Getenv("EVSPOOL_TORTURE") == "long" }

// Pick returns long under EVSPOOL_TORTURE=long, short otherwise.
func Pick[T any](short, long T) T {
	if Long() {
		return long
	}
	return short
}
