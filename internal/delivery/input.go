package delivery

import "time"

// Input is what the caller tells delivery happened, and when. Kind says
// which fields count.
type Input struct {
	Kind Kind
	Now  time.Time // every kind: when it happened

	// Restore, First, Next: the spool's oldest pending sequence; SetAside:
	// the event set aside.
	Seq     uint64
	Strikes Strikes // Restore: what an earlier process saved
	Lines   []Line  // Wrote: the lines written, in order (not kept)
	// Wrote: the socket memory the write took (0: unknown, the payload is
	// taken, a lower bound); Read, Fin: SIOCOUTQ, bytes unread; Failed with
	// CauseGone: the bytes the receiver left unread.
	N     int
	Reads bool      // Connected: the socket shows the receiver's reads (SIOCOUTQ, Unix)
	Cause Cause     // Failed: what ended the connection
	Idle  IdleFacts // Park, Recheck
}

// IdleFacts is what the caller knows, and delivery does not, when it idles.
type IdleFacts struct {
	Holding     bool // the live gate is held: the idle waits for it
	Unwatched   bool // connected and probeable, but a hang-up is not watched
	AcksPending bool // acknowledgements wait to be committed to the spool
}

// Kind is an Input's kind.
type Kind int

const (
	Restore    Kind = iota + 1 // at start: the spool's oldest pending, the saved strikes
	Connected                  // a connection was made
	First                      // the spool's oldest pending is Seq (others expired or were dropped)
	Next                       // as First, and what to write next (Ready.Send)
	Wrote                      // lines were written
	Read                       // a SIOCOUTQ reading: N bytes unread
	Tick                       // time passed
	Fin                        // the receiver's FIN, with N bytes unread (Ready.Drop)
	Failed                     // the connection failed, for Cause: it is gone
	DialFailed                 // a dial, or the preamble on its connection, failed
	Appeared                   // the socket path appeared (the receiver is binding)
	SetAside                   // Seq was moved to the dead letters and removed from the spool
	Rewind                     // the spool was salvaged: write from the oldest pending
	NoWitness                  // the witness Ready.Send asked for is not at hand
	Park                       // the caller is about to idle (Ready.Look)
	Recheck                    // another goroutine acted while the caller idled (Ready.Replan, Ready.Look)
	Released                   // the caller closed a connection it had no use for, everything on it read: no failure
)

// Cause is what the caller saw end a connection; delivery judges from it
// whether the receiver hung up, and whether with bytes unread.
type Cause int

const (
	CauseOwn    Cause = iota // the caller gave up for a reason of its own (a write error, a timeout)
	CauseGone                // a probe saw the receiver's end closed; Input.N: bytes it left unread
	CauseReset               // ECONNRESET: closed with bytes unread
	CauseBroken              // EPIPE, or the end found closed without a count
	CauseFin                 // the FIN Ready.Drop ended the connection on
)

// Line is one event written: its sequence and size with the newline.
type Line struct {
	Seq  uint64
	Size int
}

// Strikes is the one event under suspicion and its strikes, kept in the
// spool so that a restart does not forget it.
type Strikes struct {
	Seq     uint64
	N       int
	Witness uint64 // the newest event the receiver handled, suspect or not
}
