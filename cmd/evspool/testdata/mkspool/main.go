// Command mkspool fills a spool directly, without fsync, for the CLI tests
// that need a spool whose start-up scan takes a while. It is built without
// the race detector, which would make filling it several times slower.
//
//	mkspool DIR EVENTS
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/evspool/evspool/wal"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mkspool DIR EVENTS")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkspool:", err)
		os.Exit(2)
	}
	if err := fill(os.Args[1], n); err != nil {
		fmt.Fprintln(os.Stderr, "mkspool:", err)
		os.Exit(1)
	}
}

func fill(dir string, n int) error {
	w, err := wal.Open(dir, &wal.Options{NoSync: true, MaxBytes: 4 << 30})
	if err != nil {
		return err
	}
	ev := []byte("ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2 freq -1535 path delay 91 padding padding")
	batch := make([][]byte, 10000)
	for i := range batch {
		batch[i] = ev
	}
	for done := 0; done < n; done += len(batch) {
		if _, err := w.Append(context.Background(), batch[:min(len(batch), n-done)]...); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}
