//go:build !linux

package wal

// mmapFlags is 0 where MAP_POPULATE does not exist.
const mmapFlags = 0
