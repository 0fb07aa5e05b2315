//go:build !linux

package wal

import (
	"errors"
	"io"
	"os"
)

// mapFile fails here: the tree check reads with pread(2) instead.
func mapFile(*os.File, int64) (io.ReaderAt, func(), error) {
	return nil, nil, errors.New("no mapping on this platform")
}

// mmapFlags is 0 where MAP_POPULATE does not exist.
const mmapFlags = 0

// mapShared fails here: the marks file is written with pwrite(2).
func mapShared(*os.File, int) ([]byte, func(), error) {
	return nil, nil, errors.New("no mapping on this platform")
}
