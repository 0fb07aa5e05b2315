package delivery

// The numbers that shape a write on a Unix socket: its size, how much may
// be in flight, how long a writer catching up spins before it waits, and
// which commits their committer writes itself (inline).

// ChunkBytes bounds one write(2). A Unix socket frees a write's buffer only
// once it is read whole, so SIOCOUTQ shows reads a write at a time; half a
// cloud-event-proxy read (4 KiB) keeps the replay window near one read.
const ChunkBytes = 2 << 10

// inFlightMax bounds the payload written to a Unix socket and not yet seen
// read: one chunk, so each receiver read takes at most one write. While a
// batch has more chunks to write (a backlog draining) catchUpInFlight lets
// a second follow the first at once, one read's worth; then the writer
// waits until both are read, so that a reading shows the queue empty
// between reads (connState.emptyAt: only that tells two reads apart). The
// next start after an evspool crash resends everything not shown handled,
// so this and the receiver's last read are what such a crash duplicates
// (docs/delivery.md, "When evspool itself dies").
const (
	inFlightMax     = ChunkBytes
	catchUpInFlight = 2 * ChunkBytes
)

// catchUpSpins is how many looks a writer catching up takes at a reading
// receiver before it waits in the poller: the receiver reads a write in
// microseconds, the poller's wake-up takes about as long again.
const catchUpSpins = 64

// Fits reports whether n more payload bytes may be written now: the
// payload in flight stays within the window (a wider one while more chunks
// of the batch follow), or nothing is in flight (a longer event goes
// alone).
func (s State) Fits(n int, more bool) bool {
	limit := inFlightMax
	if more {
		limit = catchUpInFlight
	}
	return s.InFlight == 0 || s.InFlight+n <= limit
}

// Spins is how many quick looks to take for a read before waiting in the
// poller: some while more chunks of a batch follow, none otherwise.
func Spins(more bool) int {
	if more {
		return catchUpSpins
	}
	return 0
}

// InlineMax is the most events a committer writes in the writer's place
// (inline): about one write's worth. More is a batch the writer writes
// while the committer commits its next one.
const InlineMax = 16

// Inline reports whether the n events committed from sequence first may be
// written by their committer in the writer's place, as Next planned: the
// plan sends from first (nothing before them pending), not one event alone
// (isolating) nor the witness again, and they are few. Whether the
// connection allows it without a wait is the writer's to check.
func (r Ready) Inline(first uint64, n int) bool {
	p := r.Send
	return r.SendOK && !r.Isolating && p.ResendWitness == 0 && p.From == first && n <= min(p.Max, InlineMax)
}
