// Package boltfile reads go.etcd.io/bbolt's file format without bbolt: the
// checks made before bbolt maps a file (Layout, CheckMetaPair, CheckTrees)
// and the page scan that salvages a damaged one (Scan, InForceRoot).
//
// Every function is pure: it reads only through the io.ReaderAt it is
// given, starts no goroutine, keeps no state between calls and reads no
// clock. Every offset a page gives is checked before it is used, so any
// input, however damaged, ends in an error or a skipped element, never a
// panic or a loop. A caller that maps the file and reads through the
// mapping handles the memory faults itself (package wal does).
//
// Errors name the damage found (which page, what it says). A read error of
// the io.ReaderAt is returned as it is, or wrapped; a caller that must tell
// the two apart records its reader's errors (wal's readRecorder). The
// format is described in page.go; docs/spool.md says what wal does with it.
package boltfile
