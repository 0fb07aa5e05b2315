// Package pathwatch tells a dialer when a Unix socket's path appears, so
// that it can dial at once instead of at its next backoff tick.
//
// A listener on a Unix socket creates its path at bind(2) (a receiver such as
// cloud-event-proxy removes a stale socket file first, then listens). On
// Linux a [Watch] asks inotify(7) about the path's directory: a file of that
// name created (IN_CREATE) or renamed into place (IN_MOVED_TO). listen(2)
// follows bind right away but not atomically: a dial in between is refused,
// so the caller retries quickly a few times after the event. Elsewhere New
// returns [ErrUnsupported] and the caller keeps to its backoff.
//
// A Watch starts no goroutine: Wait reads the inotify descriptor through
// the runtime's poller with a deadline.
package pathwatch
