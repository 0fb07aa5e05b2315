package emitter

import (
	"time"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// Stats is a snapshot of an Emitter's state.
type Stats struct {
	Pending      uint64 // events in the spool
	PendingBytes uint64 // their bytes
	Emitted      uint64 // events spooled by this process
	SpoolErrors  uint64 // events echoed but not spooled (disk full, I/O error)
	EchoErrors   uint64 // failed writes to Stdout
	Delivered    uint64 // events the receiver handled: read, then out of the replay window
	// Unproven counts events acknowledged without proof that the receiver
	// handled them: over TCP (its kernel took them, its application may never
	// read them), with AckOnWrite or a negative ReplayWindow, or where reads
	// cannot be seen (not Linux). Neither lost nor known delivered.
	Unproven     uint64
	DeadLettered uint64 // events set aside in the dead-letter file by this process (poison)
	Dropped      uint64 // events dropped by the full-spool policy (survives restarts): DroppedOldest + DroppedNewest
	// DroppedOldest and DroppedNewest are Dropped by policy.
	DroppedOldest, DroppedNewest uint64
	Connected                    bool
	Reconnects                   uint64    // connections made after the first
	DialErrors                   uint64    // failed connection attempts
	WriteErrors                  uint64    // failed writes and consumption waits
	Stalls                       uint64    // times the receiver read nothing for WriteTimeout
	LastError                    string    // the last delivery error, "" if none
	LastErrorAt                  time.Time // when it happened
	OutageStart                  time.Time // when the current outage began; zero when connected
	Spool                        wal.Stats

	// Expired, Refused and Unreadable count the events this process reports
	// lost for being older than Options.MaxAge, refused before the spool
	// (by Emit, a Writer or Refuse), and unreadable in a damaged spool file;
	// each includes what a killed predecessor left unreported.
	// SpoolLosses has the counts across restarts.
	Expired    uint64
	Refused    uint64
	Unreadable uint64

	// StateWrites and StateLines count the times the state was written
	// (new connections, answered requests) and the events it carried: apart
	// from Delivered, as they were delivered before. The keys the state
	// keeps, and those it did not keep, are Spool.StateKeys and
	// Spool.StateRefused.
	StateWrites uint64
	StateLines  uint64
	// ReceivedLines counts the lines the receiver wrote, StateRequests
	// those that asked for the state; ReceivedLong the lines discarded as
	// over MaxReceiveLine, ReceivedDropped those OnReceive's queue had no
	// room for. Releases counts idle connections closed (ReleaseIdle).
	ReceivedLines   uint64
	StateRequests   uint64
	ReceivedLong    uint64
	ReceivedDropped uint64
	Releases        uint64

	PreambleErrors uint64 // connections dropped because Options.Preamble failed
	WriterRefused  uint64 // lines a Writer refused, over MaxEventSize (counted in Refused too)

	total         ledger.Losses // the ledger's counts (ledger.Book.Total)
	droppedAtOpen uint64        // of Dropped, what earlier processes reported
}

// LostEvents is Stats.Lost by kind.
type LostEvents struct {
	NotSpooled   uint64 // echoed but not spooled: disk full, I/O error (SpoolErrors)
	Refused      uint64 // refused before the spool: over the size limit, not a line
	Dropped      uint64 // dropped by the full-spool policy
	Expired      uint64 // older than MaxAge when their turn came
	DeadLettered uint64 // set aside in the dead-letter file
	Unreadable   uint64 // in a damaged spool file, not recovered by its salvage
}

// Total is the sum of the kinds.
func (l LostEvents) Total() uint64 {
	return l.NotSpooled + l.Refused + l.Dropped + l.Expired + l.DeadLettered + l.Unreadable
}

// LostByKind is what this emitter lost since Open, by kind, with what a
// killed predecessor left unreported; losses earlier runs reported are not
// counted.
func (s Stats) LostByKind() LostEvents {
	return LostEvents{
		NotSpooled:   s.SpoolErrors,
		Refused:      s.Refused,
		Dropped:      s.Dropped - min(s.droppedAtOpen, s.Dropped),
		Expired:      s.Expired,
		DeadLettered: s.DeadLettered,
		Unreadable:   s.Unreadable,
	}
}

// SpoolLosses is every loss the spool records, across restarts, by kind
// (NotSpooled and DeadLettered are this process's: the spool records
// neither).
func (s Stats) SpoolLosses() LostEvents {
	l := s.total
	return LostEvents{
		NotSpooled:   l[ledger.NotSpooled],
		Refused:      l[ledger.Refused],
		Dropped:      l[ledger.DroppedOldest] + l[ledger.DroppedNewest],
		Expired:      l[ledger.Expired],
		DeadLettered: l[ledger.DeadLettered],
		Unreadable:   l[ledger.Unreadable],
	}
}

// Lost is how many events this emitter lost since Open, whatever the cause
// (see LostByKind). The CLI exits 4 when it is not zero.
func (s Stats) Lost() uint64 { return s.LostByKind().Total() }

// Stats returns a snapshot of the emitter's counters.
func (e *Emitter) Stats() Stats {
	// The spool first: a loss is counted before the spool shows the events
	// gone, so every event Pending no longer holds is in the counts read
	// after it (delivered ones once the drainer published them).
	ss := e.spool.Stats()
	since, total := e.loss.Since(), e.loss.Total()
	s := Stats{
		Pending:       ss.PendingEvents,
		PendingBytes:  ss.PendingBytes,
		Emitted:       e.emitted.Load(),
		SpoolErrors:   since[ledger.NotSpooled],
		EchoErrors:    e.echoErrors.Load(),
		DeadLettered:  since[ledger.DeadLettered],
		DroppedOldest: total[ledger.DroppedOldest],
		DroppedNewest: total[ledger.DroppedNewest],
		Dropped:       total[ledger.DroppedOldest] + total[ledger.DroppedNewest],
		Spool:         ss,
		Refused:       since[ledger.Refused],
		Expired:       since[ledger.Expired],
		Unreadable:    since[ledger.Unreadable],

		total: total,
	}
	s.droppedAtOpen = s.Dropped - min(s.Dropped, since[ledger.DroppedOldest]+since[ledger.DroppedNewest])
	l := &e.link.pub.link
	e.link.pub.mu.Lock()
	s.Connected, s.Reconnects, s.DialErrors, s.WriteErrors = l.connected, max(l.connects, 1)-1, l.dialErrors, l.writeErrors
	s.Stalls, s.Delivered, s.Unproven = l.stalls, l.delivered, l.unproven
	s.LastError, s.LastErrorAt = l.lastErr, l.lastErrAt
	s.StateWrites, s.StateLines, s.Releases = l.stateWrites, l.stateLines, l.releases
	e.link.pub.mu.Unlock()
	lis := e.link.lis
	s.ReceivedLines, s.StateRequests = lis.lines.Load(), lis.requests.Load()
	s.ReceivedLong, s.ReceivedDropped = lis.long.Load(), lis.dropped.Load()
	s.OutageStart = e.link.out.started()
	s.PreambleErrors, s.WriterRefused = e.link.pub.pre.errors.Load(), e.writerRefused.Load()
	return s
}

type linkStats struct {
	connected               bool
	connects                uint64
	dialErrors, writeErrors uint64
	stalls                  uint64
	delivered               uint64
	unproven                uint64
	stateWrites, stateLines uint64
	releases                uint64
	lastErr                 string
	lastErrAt               time.Time
}
