package wal

import (
	"flag"
	"os"
	"testing"
)

// TestMain sets rapid's number of checks for TestModel once, before any test
// runs, unless -rapid.checks was given: a flag set inside a test would race
// with the tests that run in parallel with it.
func TestMain(m *testing.M) {
	flag.Parse()
	if !rapidChecksGiven() {
		if err := flag.Set("rapid.checks", modelChecks); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
