// Package pathwatch tells a dialer when a Unix socket's path appears (a
// listener creates it at bind(2)), so that it can dial at once instead of at
// its next backoff tick.
//
// On Linux a [Watch] asks inotify(7) about the path's directory for a file of
// that name created or renamed into place. listen(2) follows bind but not
// atomically, so a dial right after the event may be refused: the caller
// retries quickly a few times. Elsewhere New returns [ErrUnsupported]. A
// Watch starts no goroutine: Wait reads inotify through the runtime's poller.
package pathwatch
