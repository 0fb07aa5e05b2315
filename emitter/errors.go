package emitter

import (
	"errors"
	"fmt"
)

var (
	// ErrNotDelivered is matched by the *FlushError Flush returns when
	// events it waited for left the spool without reaching the receiver.
	ErrNotDelivered = errors.New("emitter: events left the spool undelivered")

	// ErrUnproven is matched by the *FlushError Flush returns when events it
	// waited for were acknowledged without proof that the receiver handled
	// them (over TCP its kernel took them: see Stats.Unproven).
	ErrUnproven = errors.New("emitter: events acknowledged without proof the receiver handled them")

	// ErrClosed is returned by Emit and Flush after Close.
	ErrClosed = errors.New("emitter: closed")

	// ErrEventTooLarge is matched by every *EventSizeError.
	ErrEventTooLarge = errors.New("emitter: event too large")

	// ErrNewline is returned by Emit for an event with a newline inside it:
	// the wire format is one event per line.
	ErrNewline = errors.New("emitter: event contains a newline; send one event per line")

	// ErrSpool is wrapped around a failure to commit an event to the spool
	// (disk full, I/O error). The event was still echoed to Stdout.
	ErrSpool = errors.New("emitter: event not spooled")
)

// EventSizeError reports an event over Options.MaxEventSize.
type EventSizeError struct {
	Size  int // bytes of the event, with its newline
	Limit int // Options.MaxEventSize
}

func (e *EventSizeError) Error() string {
	return fmt.Sprintf("emitter: event of %d bytes (with its newline) is over the limit of %d bytes; split it or raise the limit (--max-event-size)",
		e.Size, e.Limit)
}

// Is reports whether target is ErrEventTooLarge.
func (e *EventSizeError) Is(target error) bool { return target == ErrEventTooLarge }

// FlushError is what Flush returns when every event it waited for has left
// the spool but not all are known to have reached the receiver. It matches
// ErrNotDelivered when some were dropped, expired or dead-lettered, and
// ErrUnproven when some were acknowledged without proof.
// The counts add up to Waited; events emitted meanwhile may blur them.
type FlushError struct {
	Waited       uint64 // events Flush waited for
	Delivered    uint64 // of them, acknowledged by the receiver
	Dropped      uint64 // dropped by the full-spool policy
	Expired      uint64 // dropped for exceeding the maximum age
	DeadLettered uint64 // moved to the dead-letter file
	Unreadable   uint64 // lost to a damaged spool file, not recovered by its salvage
	Unproven     uint64 // acknowledged without proof of handling (Stats.Unproven)
}

func (e *FlushError) Error() string {
	msg := fmt.Sprintf("emitter: flush: of %d events, %d delivered, %d acknowledged without proof of handling, %d dropped (spool full), %d expired, %d dead-lettered",
		e.Waited, e.Delivered, e.Unproven, e.Dropped, e.Expired, e.DeadLettered)
	if e.Unreadable > 0 {
		msg += fmt.Sprintf(", %d unreadable (damaged spool)", e.Unreadable)
	}
	return msg
}

// Is reports whether target is ErrNotDelivered (some left undelivered) or
// ErrUnproven (some acknowledged without proof).
func (e *FlushError) Is(target error) bool {
	switch target {
	case ErrNotDelivered:
		return e.Dropped+e.Expired+e.DeadLettered+e.Unreadable > 0
	case ErrUnproven:
		return e.Unproven > 0
	}
	return false
}
