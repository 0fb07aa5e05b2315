package emitter

import (
	"time"

	"github.com/evspool/evspool/internal/ledger"
)

// A receiver still handles what its socket holds after evspool dies. So the
// drainer notes (ledger.PeerFile) the receiver's end of the connection, the
// process that reads it and the last event written; the next start waits for
// that end to close and acknowledges what was written there only if the
// same reader closed it (adoptPeerMark). docs/delivery.md, "When evspool itself
// dies", gives the rules. The drainer's methods that keep the note are in
// send.go, beside the writes they note.

// peerNote is what the drainer notes of the current connection's receiver.
type peerNote struct {
	notes   *ledger.PeerNotes
	ino     uint64          // the receiver's end of this connection; 0: not known yet
	reader  peerIdent       // the process that reads it; pid 0: not known
	sought  bool            // the reader was looked for on this connection
	told    bool            // a connection without a known reader was logged
	tries   int             // attempts to find the receiver's end on this connection
	through uint64          // the last sequence noted
	written uint64          // the last sequence written on this connection
	noted   bool            // the file names this connection's receiver end
	covers  uint64          // the file, naming the reader, was written through this (0: not)
	owed    bool            // acks the note covers may be missing from the spool's marks file
	scan    chan readerScan // the reader scan in flight on this connection
}

// peerTriesMax bounds the attempts to identify a connection's receiver,
// whose end has no inode until it accepts.
const peerTriesMax = 100

// peerAcceptWait bounds identifyPeer's wait for the receiver's accept.
const peerAcceptWait = 2 * time.Second

// peerSpins is how many times identifyPeer asks again at once (about a
// millisecond) before it sleeps between attempts: a receiver at hand
// accepts within tens of microseconds, and a sleep under a millisecond
// takes one. Counted, not timed: the spin waits on no clock.
const peerSpins = 100

// readerScan is the answer of a look for a connection's reader.
type readerScan struct {
	id  peerIdent
	why string // why no single reader, if none
}

// peerPoll is how often adoptPeerMark looks whether the old end is closed.
const peerPoll = 10 * time.Millisecond

// receiverMaxLine is the longest line, newline included, the receiver reads.
const receiverMaxLine = DefaultMaxEventSize
