// Package delivery is the drainer's decisions without its I/O: what the
// receiver has handled and on what evidence, what to write next, whom to
// blame for failures, when to dial, when to look at the socket again, and
// what has expired.
//
// Like etcd raft it has no goroutine, socket or clock, and its state is out
// of the caller's reach. There is one way in and one way out:
//
//   - Step takes an Input: what happened (connected, wrote, the receiver
//     read, hung up, time passed, ...) and when (Input.Now).
//   - Ready returns what to do, accumulated since the last Advance: log
//     these notes, acknowledge through, set aside, persist the strikes, drop
//     the connection, write this, the next deadline and dial, and the state
//     the caller acts on until the next Ready.
//   - Advance tells it the Ready was carried out.
//
// What the caller learns while carrying out a Ready (an event set aside) is
// an Input of the next round, never a Step inside the carrying out.
//
// docs/delivery.md gives the rules: the replay window, handled means
// proven, poison events and the dead-letter file, frozen and crash-looping
// receivers.
package delivery
