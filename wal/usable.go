package wal

// Usable returns nil while the spool can be used, ErrClosed after Close, or
// the error that left it without its file: a readiness check.
func (w *WAL) Usable() error { return w.usable() }
