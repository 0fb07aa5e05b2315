package wal

// Usable returns nil while the spool can be used, ErrClosed after Close, or
// the error that left it without its file (a compaction or a repair that
// could not reopen it): a check for a readiness probe.
func (w *WAL) Usable() error { return w.usable() }
