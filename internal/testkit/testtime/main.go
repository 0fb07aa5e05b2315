// Command testtime reads `go test -json` on stdin and prints what a person
// wants from a test run: each package's verdict as it finishes, the output of
// the tests that failed, and at the end each package's time and the five
// slowest tests, so that `make test`'s time budget stays visible. It exits 1
// if any test or package failed.
//
//	go test -json ./... | go run ./internal/testkit/testtime
package main

import (
	"fmt"
	"os"
)

func main() {
	s := newSummary()
	if err := s.read(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "testtime: %v\n", err)
		os.Exit(1)
	}
	s.print(os.Stdout, 5)
	if s.failed {
		os.Exit(1)
	}
}
