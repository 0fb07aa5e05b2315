package wal

import "syscall"

// mmapFlags makes bbolt read the whole file in when it maps it.
const mmapFlags = syscall.MAP_POPULATE
