// Package sockwait tells a sender whether the receiver on the other end of a
// stream connection has read what was written to it.
//
// A successful write(2) only means the local kernel took the bytes. If the
// receiver dies before reading them, they are gone, and the sender never
// learns. On Linux the kernel knows better: the SIOCOUTQ ioctl reports how
// many bytes the sender has queued that are not yet gone, and poll(2) reports
// whether the peer has hung up. A [Waiter] puts the two together so that a
// sender can keep a batch until the receiver has consumed it
// (evspool's promise 4, "acknowledged on consumption").
//
// # What SIOCOUTQ means
//
// On a Unix stream socket SIOCOUTQ returns the sender's sk_wmem_alloc: the
// memory charged for its buffers sitting in the peer's receive queue. That is
// the truesize of each buffer, not the payload, so for a small write it reads
// larger than the bytes written (on Linux 6.18 a write of 1 or 100 bytes reads
// 768, 1000 bytes read 2304, 64 KiB read 67072). A buffer is freed only when
// the peer has read all of it (with 1 byte of 1000 left, the count stays 2304),
// so the count drops to 0 exactly when the peer has read everything. It also
// drops to 0 when the peer closes the socket, because closing frees the unread
// buffers; the kernel then also sets ECONNRESET on the sender. Only "0" is
// meaningful; a [Waiter] never compares the count with the bytes written.
//
// On a TCP socket SIOCOUTQ returns the bytes sent but not yet acknowledged by
// the peer's kernel. Zero means the bytes were received by the peer's kernel,
// not read by the peer's application: a receiver that crashes right after
// still loses them. On loopback it is 0 as soon as write returns, whether or
// not anyone reads, unless the peer's receive window is full. That is weaker
// than on a Unix socket, and the callers' docs must say so. After a reset the
// count stays where it was (never 0), so the hang-up is checked on every
// round, not only once the queue is empty.
//
// # Why the queue is checked before the hang-up
//
// When a Unix peer closes, the kernel marks the connection shut down before it
// frees the unread buffers. So a sender that reads the queue first and sees
// 0, and then polls and sees no hang-up, knows the 0 came from reads and not
// from a close. Reading in the other order leaves a window where a close
// between the two checks passes for consumption.
//
// # Caveats
//
//   - Linux only. Elsewhere [Waiter.Supported] is false and the methods return
//     [ErrUnsupported]; the caller falls back to acknowledging on write.
//   - A peer that read everything and then closed looks the same as one that
//     closed without reading unless the kernel flagged a reset, so
//     [Waiter.WaitConsumed] reports [ErrPeerGone] in both cases and the caller
//     resends: at least once, never lost.
//   - A peer that only shuts down its writing side (shutdown(SHUT_WR)) has
//     not hung up: it still reads. Only POLLHUP and POLLERR count, never
//     POLLRDHUP alone. On a Unix socket a closing peer always raises POLLHUP.
//     On TCP a peer that closed after reading everything sent only a FIN,
//     which looks like a half-close until the next write draws a reset; a
//     peer that closed with data unread resets at once.
//   - Waiting is polling: the kernel has no notification for "the peer has
//     read everything". The interval starts small and backs off.
package sockwait
