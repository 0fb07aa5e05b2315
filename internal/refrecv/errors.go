package refrecv

import "errors"

// ErrRunning is returned by Restart when the receiver is still listening.
var ErrRunning = errors.New("refrecv: receiver is already listening; Close or Kill it first")

// ErrAddrInUse is returned when a Unix socket path is taken by a live
// listener, so it is not stale and is not removed.
var ErrAddrInUse = errors.New("refrecv: address in use by a live listener")

// errKilled ends reads on a connection of a killed receiver.
var errKilled = errors.New("refrecv: receiver killed")
