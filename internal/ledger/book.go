package ledger

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evspool/evspool/wal"
)

// Config tunes a Book.
type Config struct {
	Logger   *slog.Logger     // where the lines go; nil: discarded
	Now      func() time.Time // the rate limit's clock; nil: time.Now
	Interval time.Duration    // at most one line of a kind per Interval, the first at once
	MaxAge   time.Duration    // said in the Expired line
}

// Book is the one account of an emitter's losses: it counts every kind,
// logs each kind's line (rate-limited), records in the spool the Refused
// count and what was reported, and at Open reports what a killed
// predecessor left unreported. Every loss is noted into it once, as a
// value, by the code that lost the events: Emit's callers (refused, not
// spooled, dropped by a full spool), the spool (OnLoss: drops, salvages), the
// drainer (expired, dead-lettered). Stats, metrics and the
// final line read it. Safe for concurrent use.
type Book struct {
	cfg   Config
	spool *wal.WAL
	news  atomic.Bool // counted and not logged yet: Tick has work

	mu     sync.Mutex // guards what follows; never held while calling the spool
	total  Losses     // the recorded kinds: the spool's totals; the others: this process's
	atOpen Losses     // reported before Open: earlier processes reported them
	upTo   Losses     // the totals this process's lines covered
	reps   [Kinds]Reporter

	markMu sync.Mutex // orders the records of what was reported
}

// New returns a Book that counts before it is opened: the spool's OnLoss
// may call Lost before Open returns.
func New(c Config) *Book {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	b := &Book{cfg: c}
	for k := range b.reps {
		b.reps[k] = Reporter{Now: c.Now, Interval: c.Interval}
	}
	return b
}

// Open takes the spool's record: it logs what earlier processes lost and
// did not report, and records it as reported. salvaged is what this Open's
// salvage of the spool found unreadable (logged with the salvage).
func (b *Book) Open(spool *wal.WAL, salvaged uint64) {
	b.spool = spool
	total, err := Totals(spool)
	rep, known, rerr := loadReported(spool)
	if err = errors.Join(err, rerr); err != nil {
		b.cfg.Logger.Debug("cannot read the spool's record of losses", "error", err.Error())
	}
	logged := rep
	logged[Unreadable] += salvaged
	if !known && total != (Losses{}) {
		// An earlier version logged its losses but did not record it.
		b.cfg.Logger.Debug("spool of an earlier version: its loss counts are taken as reported")
		rep, logged = total, total
		rep[Unreadable] -= min(salvaged, rep[Unreadable])
	}
	for k := range recorded {
		if n := total[k] - min(logged[k], total[k]); n > 0 {
			b.cfg.Logger.Warn(fmt.Sprintf(lines[k].prev, n), "unreported_events", n, "kind", lines[k].name,
				"hint", "it was killed before it logged them; inspect shows the totals")
		}
	}
	b.mu.Lock()
	for k := range recorded {
		b.total[k] = total[k] // the spool's record holds whatever Lost counted before
	}
	b.atOpen, b.upTo = rep, b.total
	b.mu.Unlock()
	b.mark()
}

// Note counts n events of kind k lost and logs them if the kind's line is
// due, with args after its attributes. Refused events are recorded in the
// spool before they are logged.
func (b *Book) Note(k Kind, n uint64, args ...any) { b.note(k, n, false, args...) }

// Lost counts what the spool lost in a commit or a salvage: the spool's
// OnLoss, called with its lock held. It only counts; Tick logs.
func (b *Book) Lost(l wal.Loss) {
	b.mu.Lock()
	b.total[DroppedOldest] += l.Dropped.Events
	b.reps[DroppedOldest].Lost(l.Dropped.Events, false)
	if l.Salvage != nil {
		b.total[Unreadable] += l.Salvage.Missing
		b.reps[Unreadable].Lost(l.Salvage.Missing, false)
	}
	b.mu.Unlock()
	b.news.Store(true)
}

// Logged records that the caller logged kind k's losses counted so far
// (a salvage's own line): no line of the kind is due for them.
func (b *Book) Logged(k Kind) {
	b.mu.Lock()
	b.reps[k].Take()
	b.upTo[k] = b.total[k]
	b.mu.Unlock()
	b.mark()
}

// Undo takes back n events of kind k that Note counted before their loss,
// which then failed: the events stay, and are counted when they are lost.
func (b *Book) Undo(k Kind, n uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total[k] -= min(n, b.total[k])
	b.reps[k].events -= min(n, b.reps[k].events)
}

// Tick logs what was counted without a line (the spool's losses), and the
// rest of a rate-limited kind whose interval has passed. Cheap when there
// is nothing to log.
func (b *Book) Tick() {
	if !b.news.Load() || !b.news.Swap(false) {
		return
	}
	for k := range Kinds {
		b.note(k, 0, false)
	}
}

// Final logs every loss not logged yet, marked final, and records every
// loss as reported: at Close, once nothing else counts losses.
func (b *Book) Final() {
	for k := range Kinds {
		b.note(k, 0, true, "final", true)
	}
	b.mu.Lock()
	b.upTo = b.total
	b.mu.Unlock()
	b.mark()
}

// Since is what this process reports lost, by kind: what it lost since Open
// and what a killed predecessor left unreported.
func (b *Book) Since() Losses {
	b.mu.Lock()
	defer b.mu.Unlock()
	var l Losses
	for k, n := range b.total {
		l[k] = n - min(b.atOpen[k], n)
	}
	return l
}

// Total is every loss counted: for the kinds the spool records, across
// restarts; for the others, since Open.
func (b *Book) Total() Losses {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// note counts and logs (see Note); final logs whatever is left.
func (b *Book) note(k Kind, n uint64, final bool, args ...any) {
	ln := &lines[k]
	b.mu.Lock()
	b.total[k] += n
	refused := b.total[Refused]
	due := b.reps[k].Lost(n, final) && ln.msg != ""
	var events uint64
	if due {
		events, _ = b.reps[k].Take()
		b.upTo[k] = b.total[k]
	} else if b.reps[k].events > 0 {
		b.news.Store(true) // the rest, once the interval passed
	}
	b.mu.Unlock()
	if k == Refused && n > 0 {
		// Recorded before logged: a line marks reported only what is recorded.
		b.markMu.Lock()
		err := markReported(b.spool, b.reported(), refused)
		b.markMu.Unlock()
		if err != nil && !errors.Is(err, wal.ErrClosed) {
			b.cfg.Logger.Debug("cannot record lost events in the spool", "kind", ln.name, "error", err.Error())
		}
	}
	if !due {
		return
	}
	attrs := []any{ln.count, events}
	if ln.attrs != nil {
		attrs = append(attrs, ln.attrs(b)...)
	}
	b.cfg.Logger.Warn(ln.msg, append(attrs, args...)...)
	if k < recorded {
		b.mark()
	}
}

// reported is what this process's lines covered, with what earlier ones
// reported.
func (b *Book) reported() Losses {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.upTo
}

// mark records in the spool the losses this process's lines covered as
// reported.
func (b *Book) mark() {
	b.markMu.Lock()
	defer b.markMu.Unlock()
	b.mu.Lock()
	r, refused := b.upTo, b.total[Refused]
	b.mu.Unlock()
	if err := markReported(b.spool, r, refused); err != nil && !errors.Is(err, wal.ErrClosed) {
		b.cfg.Logger.Warn("cannot record in the spool that losses were reported; the next start may report them again", "error", err.Error())
	}
}
