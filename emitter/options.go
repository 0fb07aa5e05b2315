package emitter

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/evspool/evspool/wal/clock"

	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// Defaults of Options.
const (
	DefaultNetwork      = "unix"
	DefaultMaxEventSize = 64 << 10
	DefaultDialTimeout  = time.Second
	DefaultWriteTimeout = 5 * time.Second
	DefaultStallTimeout = 30 * time.Second
	DefaultBatchEvents  = 1000
	DefaultBatchBytes   = 256 << 10
	DefaultMinBackoff   = 10 * time.Millisecond
	DefaultMaxBackoff   = 100 * time.Millisecond
	DefaultWarnInterval = 30 * time.Second
	DefaultReplayLinger = 2 * time.Second
	DefaultMaxAttempts  = 3
)

// Options tunes an Emitter. The zero value, or a nil *Options, means
// defaults. Open refuses a negative count, size or duration where a field
// gives none a meaning, and bounds that contradict, with an error naming
// the field.
type Options struct {
	// Network is "unix" (default) or "tcp".
	Network string

	// MaxSpoolBytes caps the spool file's size on disk. Default 64 MiB.
	MaxSpoolBytes int64
	// OnFull is what happens when the spool is full. Default wal.DropOldest.
	OnFull wal.Policy
	// NoSync turns off the fsync at each spool commit. Unsafe: events then
	// survive a crash of the process but not a power loss. Default false.
	NoSync bool

	// MaxEventSize is the largest event accepted, its newline included.
	// Default 64 KiB, the longest line cloud-event-proxy reads; at most a
	// quarter of MaxSpoolBytes.
	MaxEventSize int

	// DialTimeout bounds each connection attempt. Default 1 s.
	DialTimeout time.Duration
	// WriteTimeout bounds each write. A receiver that reads nothing for as
	// long is stalled (logged, counted, sent nothing new); one stuck for as
	// long in the middle of a line loses its connection and its unread
	// events are resent. Default 5 s.
	WriteTimeout time.Duration
	// StallTimeout is how long a receiver may read nothing before it is
	// frozen, counted as an outage. It keeps its connection and nothing is
	// resent, so events never arrive out of order. Default 30 s, or
	// WriteTimeout if longer; one set below WriteTimeout is refused.
	StallTimeout time.Duration
	// BatchEvents and BatchBytes bound one batch read from the spool; it is
	// written in chunks of at most 2 KiB that end at a line's end.
	// Defaults 1000 and 256 KiB.
	BatchEvents int
	BatchBytes  int
	// MinBackoff and MaxBackoff bound the jittered exponential pause between
	// refused connection attempts, which never give up. Defaults 10 ms and
	// 100 ms (MinBackoff left 0 is never above MaxBackoff); a MinBackoff above
	// MaxBackoff is refused. On Linux a Unix socket's path appearing cuts the
	// pause short.
	// A receiver that keeps failing before it handles anything is dialled
	// less and less often, up to every 5 s (or MaxBackoff, if longer),
	// unless it was down at least 250 ms before its path appeared.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// WarnInterval is the least time between two warnings of one kind.
	// Default 30 s.
	WarnInterval time.Duration

	// MaxAge, when positive, is the age past which an event is removed
	// unsent when its turn comes, counted in Stats.Expired and logged. Ages
	// run on the boot clock, which wall-clock steps do not move; an event
	// may arrive up to WriteTimeout past MaxAge (docs/daemon.md, "MaxAge").
	// Default 0: events never expire.
	MaxAge time.Duration
	// Preamble, if set, is written on every new connection before anything
	// spooled: see PreambleFunc. Default: none.
	Preamble PreambleFunc
	// PreambleOnRelease writes the Preamble again at Release on a connection
	// kept through a Hold, before anything spooled. Default false: Release
	// resumes delivery where it stopped.
	PreambleOnRelease bool
	// MaxHold, when positive, releases a Hold that lasted this long, with a
	// warning. Default 0: a hold lasts until Release.
	MaxHold time.Duration

	// Stdout receives a copy of every event, after it is spooled. Default
	// os.Stdout; io.Discard turns the echo off.
	Stdout io.Writer
	// Logger receives the emitter's logs. Default: none.
	Logger *slog.Logger
	// Dial connects to the receiver. Default a net.Dialer with DialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnCommit, if set, is called after each commit Emit makes with its
	// duration, event count and error (see emitter/metrics); it must be quick.
	OnCommit func(d time.Duration, events int, err error)
	// ReplayWindow and ReplayLinger bound the replay window: an event the
	// receiver has read stays spooled, to be resent if the receiver hangs
	// up, until it is known handled (docs/delivery.md, "The replay window").
	// ReplayWindow 0 (the default) holds the receiver's last read on a Unix
	// socket and relies on ReplayLinger alone over TCP (where nothing proves
	// an event handled: Stats.Unproven); a positive one holds that many bytes
	// after each event; a negative one acknowledges events once read
	// (unproven too). In every mode an event read ReplayLinger ago by a receiver
	// still connected is handled, and Flush waits up to ReplayLinger after
	// the last read. Default 2 s.
	ReplayWindow int
	ReplayLinger time.Duration
	// MaxAttempts is how many receiver failures blamed on one event set it
	// aside in the dead-letter file (docs/delivery.md, "Poison events and
	// the dead-letter file"). Default 3; negative: never set anything aside.
	MaxAttempts int
	// MaxDeadLetterBytes is the dead-letter file's size at which it is
	// rotated (to dead-letters.1, replacing the older one). Default
	// 16 MiB.
	MaxDeadLetterBytes int64
	// AckOnWrite acknowledges events once written instead of once read, as
	// happens anyway where reads cannot be seen (not Linux, or not a Unix
	// stream or TCP connection). Default false.
	AckOnWrite bool

	// StateKey, if set, turns state keys on (docs/delivery.md, "State
	// keys"): it says of each event its key, or that it clears, and the spool
	// keeps the newest event of every key. Every new connection then starts
	// with the newest event of each key that has nothing pending, then the
	// backlog. Only for receivers that treat a line as a value (last one
	// wins), never for one that counts lines. JSONStateKey builds one.
	// Default: off.
	StateKey StateKeyFunc
	// StateRequest, with StateKey, tells a line the receiver writes that
	// asks for the state; it is answered with the state at the next write
	// boundary and not handed to OnReceive. It must not keep line.
	// JSONType builds one. Default: none.
	StateRequest func(line []byte) bool
	// MaxStateKeys bounds the keys the state keeps; a new key past it is
	// not kept, counted (Stats.Spool.StateRefused) and logged. Default 1024.
	MaxStateKeys int
	// StateMaxAge, when positive, leaves out of the state a key nothing has
	// renewed for this long, on the boot clock. Default 0: none is left out.
	StateMaxAge time.Duration
	// OnReceive, if set, is handed each line the receiver writes, without
	// its newline, in order, from a goroutine of its own; it may keep line.
	// Lines wait for it in a queue of 256: one that finds the queue full is
	// dropped and counted (Stats.ReceivedDropped), so a slow OnReceive never
	// stalls delivery. Default: lines are read and discarded.
	OnReceive func(line []byte)
	// MaxReceiveLine is the longest line, newline included, taken from the
	// receiver; a longer one is discarded and counted. Default 64 KiB.
	MaxReceiveLine int
	// ReleaseIdle, when positive, closes a connection once it has had
	// nothing to carry for this long, and dials again when there is: a
	// receiver that serves one connection at a time can then serve others.
	// Default 0: the connection is kept.
	ReleaseIdle time.Duration

	// Clock times everything the emitter times: the stamps on events and
	// their ages (MaxAge), the hold (MaxHold), dial pauses, the replay
	// linger, stalls, every wait and poll, Flush and the warnings' rate.
	// Only socket deadlines (DialTimeout, WriteTimeout on one system
	// call) run on real time. A test can drive a whole emitter on a fake
	// clock. Default: the system clock, with ages on CLOCK_BOOTTIME.
	Clock Clock
}

// Clock is the emitter's time source: wall time (Now), a clock that counts
// through suspend and ignores wall-clock steps (Boot), the boot's identity
// (BootID) and timers. It is package wal/clock's, where clock.System is
// the default; a program can implement it.
type Clock = clock.Clock

// Timer is a Clock's timer: C fires once the duration passed; Stop and
// Reset behave as time.Timer's.
type Timer = clock.Timer

func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
	}
	setDefault(&c.Network, DefaultNetwork)
	setDefault(&c.MaxEventSize, DefaultMaxEventSize)
	setDefault(&c.DialTimeout, DefaultDialTimeout)
	setDefault(&c.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.StallTimeout, max(DefaultStallTimeout, c.WriteTimeout))
	setDefault(&c.BatchEvents, DefaultBatchEvents)
	setDefault(&c.BatchBytes, DefaultBatchBytes)
	setDefault(&c.MaxBackoff, DefaultMaxBackoff)
	if c.MinBackoff == 0 && c.MaxBackoff > 0 { // the default, never above MaxBackoff
		c.MinBackoff = min(DefaultMinBackoff, c.MaxBackoff)
	}
	setDefault(&c.WarnInterval, DefaultWarnInterval)
	setDefault(&c.ReplayLinger, DefaultReplayLinger)
	setDefault(&c.MaxAttempts, DefaultMaxAttempts)
	setDefault(&c.MaxDeadLetterBytes, ledger.DefaultMaxDeadLetterBytes)
	setDefault(&c.MaxStateKeys, wal.DefaultMaxStateKeys)
	setDefault(&c.MaxReceiveLine, DefaultMaxEventSize)
	if err := c.check(); err != nil {
		return c, err
	}
	setDefault(&c.Stdout, io.Writer(os.Stdout))
	setDefault(&c.Logger, slog.New(slog.DiscardHandler))
	setDefault(&c.Clock, clock.System())
	if c.Dial == nil {
		d := &net.Dialer{Timeout: c.DialTimeout}
		c.Dial = d.DialContext
	}
	return c, nil
}

// check refuses, with defaults filled (a value left 0 is the default by
// then), what no field means: a negative count, size or duration where the
// field gives none a meaning, and bounds that contradict. The error names
// the field, the value and what to give instead. OnFull and MaxStateKeys,
// passed on as they are, are the spool's to check (wal.Options).
func (c *Options) check() error {
	if c.Network != "unix" && c.Network != "tcp" {
		return fmt.Errorf("emitter: network %q is not supported: use unix or tcp", c.Network)
	}
	if c.MaxSpoolBytes != 0 && c.MaxSpoolBytes < wal.MinMaxBytes {
		return fmt.Errorf("emitter: MaxSpoolBytes %d is below the spool's minimum: give at least %d (1 MiB), or 0 for the default 64 MiB",
			c.MaxSpoolBytes, wal.MinMaxBytes)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"MaxEventSize", c.MaxEventSize}, {"MaxReceiveLine", c.MaxReceiveLine}} {
		if f.v < 2 {
			return fmt.Errorf("emitter: %s %d is too small: give at least 2 (one byte and the newline), or 0 for the default 64 KiB", f.name, f.v)
		}
	}
	if spool := cmp.Or(c.MaxSpoolBytes, wal.DefaultMaxBytes); int64(c.MaxEventSize) > spool/4 {
		return fmt.Errorf("emitter: MaxEventSize %d is over a quarter of MaxSpoolBytes %d: events that size would not fit the spool beside others; "+
			"give at most %d, or raise MaxSpoolBytes", c.MaxEventSize, spool, spool/4)
	}
	for _, f := range []struct {
		name       string
		v          int64
		unit, zero string
	}{
		{"BatchEvents", int64(c.BatchEvents), "count", "1000"},
		{"BatchBytes", int64(c.BatchBytes), "size", "256 KiB"},
		{"MaxDeadLetterBytes", c.MaxDeadLetterBytes, "size", "16 MiB"},
	} {
		if f.v < 0 {
			return fmt.Errorf("emitter: %s %d is negative: give a positive %s, or 0 for the default %s", f.name, f.v, f.unit, f.zero)
		}
	}
	if err := c.checkDurations(); err != nil {
		return err
	}
	if c.StallTimeout < c.WriteTimeout {
		return fmt.Errorf("emitter: StallTimeout %v is below WriteTimeout %v: a receiver is slow (WriteTimeout) before it is frozen; "+
			"give at least WriteTimeout, or 0 for 30 s, or WriteTimeout if longer", c.StallTimeout, c.WriteTimeout)
	}
	if c.MinBackoff > c.MaxBackoff {
		return fmt.Errorf("emitter: MinBackoff %v is above MaxBackoff %v, which caps every pause: give MaxBackoff at least MinBackoff",
			c.MinBackoff, c.MaxBackoff)
	}
	return nil
}

// checkDurations refuses a negative duration where 0 is the default or off.
func (c *Options) checkDurations() error {
	for _, f := range []struct {
		name string
		v    time.Duration
		zero string
	}{
		{"DialTimeout", c.DialTimeout, "the default 1 s"},
		{"WriteTimeout", c.WriteTimeout, "the default 5 s"},
		{"StallTimeout", c.StallTimeout, "30 s, or WriteTimeout if longer"},
		{"MinBackoff", c.MinBackoff, "the default 10 ms"},
		{"MaxBackoff", c.MaxBackoff, "the default 100 ms"},
		{"WarnInterval", c.WarnInterval, "the default 30 s"},
		{"ReplayLinger", c.ReplayLinger, "the default 2 s"},
		{"MaxAge", c.MaxAge, "none"},
		{"MaxHold", c.MaxHold, "holds that last until Release"},
		{"StateMaxAge", c.StateMaxAge, "none"},
		{"ReleaseIdle", c.ReleaseIdle, "a connection kept"},
	} {
		if f.v < 0 {
			return fmt.Errorf("emitter: %s %v is negative: give a positive duration, or 0 for %s", f.name, f.v, f.zero)
		}
	}
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
