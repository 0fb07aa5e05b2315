// Package sockwait tells a sender whether the receiver on the other end of a
// stream connection has read what was written to it, so that a batch can be
// kept until it is consumed; a successful write only means the local kernel
// took the bytes.
//
// On Linux a [Waiter] reads SIOCOUTQ and polls for a hang-up. On a Unix
// socket SIOCOUTQ is the buffer memory still queued at the peer (more than the
// payload; a buffer is freed only when read whole), so it reaches 0 exactly
// when the peer has read everything, or has closed. On TCP it is the bytes the
// peer's kernel has not acknowledged: 0 means received, not read. Only 0 is
// meaningful.
//
// The queue is read before the hang-up is polled: a closing Unix peer is
// marked shut down before its unread buffers are freed, so "0, then no
// hang-up" can only mean the peer read everything.
//
// # Caveats
//
//   - Linux only. Elsewhere [Waiter.Supported] is false and the queries
//     return [ErrUnsupported]; the caller acknowledges on write instead.
//   - A peer that read everything and then closed is reported as gone, like
//     one that closed unread: the caller resends (at least once, never lost).
//   - Only POLLHUP and POLLERR are a hang-up. A peer that shut down its
//     writing side still reads; on TCP a peer that closed after reading
//     everything sent only a FIN, which looks the same until a write draws
//     a reset.
//   - Waiting is polling: the kernel does not notify "the peer read it all".
package sockwait
