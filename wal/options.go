package wal

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/evspool/evspool/wal/clock"
)

// Policy decides what Append does when the spool is at its size cap.
type Policy int

const (
	// DropOldest removes the oldest pending events to make room for new ones,
	// counting them. The default: for telemetry the newest are worth most.
	DropOldest Policy = iota
	// DropNewest refuses the new events with ErrFull and counts them.
	DropNewest
	// Block makes Append wait until Ack frees enough space or its context ends.
	Block
)

var policyNames = [...]string{DropOldest: "drop-oldest", DropNewest: "drop-newest", Block: "block"}

// String returns the policy's name as the CLI spells it ("drop-oldest").
func (p Policy) String() string {
	if p < 0 || int(p) >= len(policyNames) {
		return fmt.Sprintf("Policy(%d)", int(p))
	}
	return policyNames[p]
}

// ParsePolicy parses a policy name as String returns it.
func ParsePolicy(s string) (Policy, error) {
	for p, name := range policyNames {
		if s == name {
			return Policy(p), nil
		}
	}
	return 0, fmt.Errorf("wal: unknown full-spool policy %q: use drop-oldest, drop-newest or block", s)
}

const (
	// DefaultMaxBytes is the default cap on the spool file's size.
	DefaultMaxBytes = 64 << 20
	// MinMaxBytes is the smallest cap Open accepts.
	MinMaxBytes = 1 << 20
	// DefaultLockTimeout is the default Options.LockTimeout.
	DefaultLockTimeout = time.Second
)

// Options tunes a spool. The zero value, or a nil *Options, means defaults.
// Open refuses a negative value, naming the field.
type Options struct {
	// MaxBytes caps the size of the spool file on disk, bbolt's own overhead
	// and its growth steps included. Default DefaultMaxBytes (64 MiB); values
	// below MinMaxBytes (1 MiB) are refused.
	MaxBytes int64

	// OnFull is what Append does when the spool is full. Default DropOldest.
	OnFull Policy

	// NoSync turns off the fsync at each commit. Unsafe: committed events
	// then survive a process crash but not a power loss or kernel crash.
	NoSync bool

	// LockTimeout is how long Open waits for a spool locked by another
	// process. Default DefaultLockTimeout.
	LockTimeout time.Duration

	// Clock is the spool's one source of time: it stamps events with the
	// wall clock and the boot clock, which ages them regardless of
	// wall-clock steps (Entry.Age), measures every interval on the boot
	// clock (FlushAcks' idleness, commit times, the group-commit linger,
	// heal) and times every wait (the lock, retried reads). It is the
	// emitter's clock, one interface for both. On a clock that stands still
	// no commit lingers for a group, and a wait lasts until the clock moves.
	// Default: clock.System(), with the boot clock on CLOCK_BOOTTIME.
	Clock clock.Clock

	// Context, if set, cancels Open's start-up scan; Open then returns an
	// error matching its Err(). Used by Open only.
	Context context.Context

	// MaxStateKeys bounds the keys the state keeps (AppendState). Default
	// DefaultMaxStateKeys.
	MaxStateKeys int

	// Logger gets what the spool does on its own (retried reads). Default: discard.
	Logger *slog.Logger

	// OnLoss, if set, is told what the spool lost while open: what a
	// commit dropped under DropOldest, as the commit ends and before its
	// effects are seen (Stats, FirstSeq, Read), and what a salvage after
	// Open found unreadable (Open's own is Salvaged). A caller that counts
	// losses so counts them before anyone sees the events gone. It is
	// called with the spool's lock held and must not call the spool. The
	// same counts are in Stats (DroppedOldest, Unreadable).
	OnLoss func(Loss)

	// faults injects read failures (tests only; see transient.go).
	faults faultSeam

	// fsyncDir, if set, makes a directory's entries durable in place of
	// (*os.File).Sync (tests only: they watch which directories are synced).
	fsyncDir func(path string, d *os.File) error

	// crashPoint, if set, is called at each named step of a salvage (tests
	// only: the crash tests kill the process there).
	crashPoint func(step string)
}

// withDefaults returns a filled-in copy; the caller's Options are not touched.
func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	c.MaxBytes = cmp.Or(c.MaxBytes, DefaultMaxBytes)
	c.MaxStateKeys = cmp.Or(c.MaxStateKeys, DefaultMaxStateKeys)
	c.LockTimeout = cmp.Or(c.LockTimeout, DefaultLockTimeout)
	if err := c.check(); err != nil {
		return c, err
	}
	if c.Clock == nil {
		c.Clock = clock.System()
	}
	c.Context = cmp.Or(c.Context, context.Background())
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.fsyncDir == nil {
		c.fsyncDir = syncFile
	}
	if c.crashPoint == nil {
		c.crashPoint = func(string) {}
	}
	return c, nil
}

// check refuses, with defaults filled, what no field means; the error names
// the field, the value and what to give instead.
func (c *Options) check() error {
	switch {
	case c.MaxBytes < MinMaxBytes:
		return fmt.Errorf("wal: MaxBytes %d is below the minimum of %d bytes (1 MiB): give at least that, or 0 for the default 64 MiB",
			c.MaxBytes, MinMaxBytes)
	case c.OnFull < DropOldest || c.OnFull > Block:
		return fmt.Errorf("wal: OnFull %d is not a policy: use DropOldest, DropNewest or Block", int(c.OnFull))
	case c.LockTimeout < 0:
		return fmt.Errorf("wal: LockTimeout %v is negative: give a positive duration, or 0 for the default 1 s", c.LockTimeout)
	case c.MaxStateKeys < 0:
		return fmt.Errorf("wal: MaxStateKeys %d is negative: give a positive count, or 0 for the default %d", c.MaxStateKeys, DefaultMaxStateKeys)
	}
	return nil
}
