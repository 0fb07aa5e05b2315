package ledger

// Kind is a kind of loss; Losses is indexed by it.
type Kind int

// The kinds before NotSpooled are recorded in the spool, so that a process
// killed before it logged them leaves them to the next start: the spool
// counts the first four in the transaction that loses the events, and the
// ledger keeps the Refused count (RecordRefused). The others are counted by
// the process that lost the events, which alone can know of them.
const (
	DroppedOldest Kind = iota // removed to make room under drop-oldest
	DroppedNewest             // refused by a full spool under drop-newest
	Expired                   // older than the maximum age when their turn came
	Unreadable                // pending when the file was damaged, not recovered by its salvage
	Refused                   // refused before the spool: over the size limit, or not a line
	NotSpooled                // echoed but not spooled: disk full, I/O error, closed, no room in time
	DeadLettered              // set aside in the dead-letter file (logged where it is set aside)
	Kinds                     // the number of kinds
)

// recorded is the number of kinds the spool records (those before it).
const recorded = NotSpooled

// Losses are event counts by Kind.
type Losses [Kinds]uint64

// line is how one kind is logged: in the run that lost the events
// (rate-limited, the rest at the end with final=true), and by the next
// start when that run was killed before it logged them.
type line struct {
	name  string              // the next start's kind= attribute
	msg   string              // this run's line; "" for a kind logged where it happens
	count string              // its attribute of the events
	prev  string              // the next start's line, of %d events
	attrs func(b *Book) []any // what else this run's line says
}

// lines are the kinds' lines; a kind added is a row here.
var lines = [Kinds]line{
	DroppedOldest: {name: "dropped_oldest", msg: "spool full: oldest events dropped to make room", count: "dropped_events",
		prev: "the previous run dropped %d events and did not report it",
		attrs: func(b *Book) []any {
			st := b.spool.Stats()
			return []any{"dropped_total", b.Total()[DroppedOldest], "pending_events", st.PendingEvents, "max_spool_bytes", st.MaxBytes,
				"hint", "raise the spool's size cap (--max-spool-size) or check the receiver"}
		}},
	DroppedNewest: {name: "dropped_newest", msg: msgNotSpooled, count: "events",
		prev: "the previous run refused %d events (spool full) and did not report it"},
	Expired: {name: "expired", msg: "events older than the maximum age dropped unsent", count: "expired_events",
		prev: "the previous run expired %d events and did not report it",
		attrs: func(b *Book) []any {
			return []any{"expired_total", b.Total()[Expired], "max_age", b.cfg.MaxAge.String(), "pending_events", b.spool.Len()}
		}},
	Unreadable: {name: "unreadable", msg: "spool was damaged and has been salvaged: events lost", count: "unreadable_events",
		prev: "the previous run found %d events unreadable in its damaged spool and did not report it",
		attrs: func(b *Book) []any {
			attrs := []any{"unreadable_total", b.Total()[Unreadable]}
			if r := b.spool.Salvaged(); r != nil {
				attrs = append(attrs, "corrupt_file", r.CorruptPath, "cause", r.Cause)
			}
			return attrs
		}},
	Refused: {name: "refused", msg: "events refused, not spooled", count: "events",
		prev: "the previous run refused %d lines (over the size limit, or not a line) and did not report it"},
	NotSpooled:   {name: "not_spooled", msg: msgNotSpooled, count: "events"},
	DeadLettered: {name: "dead_lettered"},
}

// msgNotSpooled is the line of events echoed and not spooled, whatever the
// reason (its reason= attribute says which).
const msgNotSpooled = "events not spooled, echoed only"
