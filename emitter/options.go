package emitter

import (
	"context"
	"fmt"
	"github.com/evspool/evspool/internal/clock"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

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
	DefaultReplayWindow = 64 << 10 // a size for Options.ReplayWindow; no default uses it
	DefaultReplayLinger = 2 * time.Second
	DefaultMaxAttempts  = 3
)

// Options tunes an Emitter. The zero value, or a nil *Options, means defaults.
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
	// Default 64 KiB, the longest line cloud-event-proxy reads.
	MaxEventSize int

	// DialTimeout bounds each connection attempt. Default 1 s.
	DialTimeout time.Duration
	// WriteTimeout bounds each write. When it fires, or when the receiver
	// reads nothing for as long, the receiver is stalled: logged and
	// counted; it keeps its connection and gets nothing new until it reads
	// again. A receiver that read part of a line and nothing more for as
	// long cannot read that line: the connection is dropped and its unread
	// events resent on a new one. Default 5 s.
	WriteTimeout time.Duration
	// StallTimeout is how long a receiver may read nothing before it is
	// frozen: an outage, logged and counted as one. It still keeps its
	// connection, and nothing is resent: a receiver that reads connections
	// side by side would read a new connection's events beside the old
	// one's queue, out of order. Default 30 s, at least WriteTimeout.
	StallTimeout time.Duration
	// BatchEvents and BatchBytes bound one batch read from the spool for
	// sending; it is written in chunks of at most 2 KiB, each ending at a
	// line's end. Defaults 1000 and 256 KiB.
	BatchEvents int
	BatchBytes  int
	// MinBackoff and MaxBackoff bound the pause between connection attempts
	// (exponential, with jitter, never giving up). Defaults 10 ms and 100 ms:
	// a missing receiver costs about 10 dial attempts a second. On a Unix
	// socket the pause is cut short when the socket's path appears (inotify
	// on its directory, Linux): a returning receiver is dialled at once.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// WarnInterval is the least time between two warnings of one kind: of
	// one outage, of a stalled receiver, of spool failures, of drops.
	// Default 30 s.
	WarnInterval time.Duration

	// MaxAge, when positive, is the age past which an event is not worth
	// sending, for a daemon that prefers fresh state to a long outage's
	// history. When its turn to be sent comes, an event spooled longer ago
	// is removed unsent, counted (Stats.Expired; Stats.Spool.Expired keeps
	// the count across restarts in the spool file) and logged
	// (rate-limited), and delivery goes on in order with the next one. A
	// stale event waiting behind events the receiver has but has not
	// confirmed holds back what follows until they are, then expires.
	// Ages are measured on the boot clock (CLOCK_BOOTTIME, recorded with
	// each event), which wall-clock steps (phc2sys, NTP, an operator) do
	// not move: within a boot an event expires neither early nor late
	// whatever the wall clock does. An event spooled before a reboot has
	// no comparable boot-clock reading and is aged on the wall clock. An
	// event is judged when its batch is read, so it may reach the receiver
	// up to one write (WriteTimeout) past MaxAge. Default 0: events never
	// expire.
	MaxAge time.Duration
	// Preamble, if set, is called on every new connection before anything
	// spooled is sent on it: see PreambleFunc. Default: none.
	Preamble PreambleFunc
	// PreambleOnRelease writes the Preamble again on a connection that
	// was kept through a Hold, at Release, before anything spooled: for a
	// daemon whose gate means "the receiver has replayed its state; tell it
	// that what follows is live". Default false: Release resumes delivery
	// where it stopped.
	PreambleOnRelease bool
	// MaxHold, when positive, bounds a Hold: a hold that lasts this long is
	// released (logged as a warning), as linuxptp-daemon's live gate gives
	// up waiting for the replay after 60 s. Default 0: a hold lasts until
	// Release.
	MaxHold time.Duration

	// Stdout receives a copy of every event, after it is spooled. Default
	// os.Stdout; io.Discard turns the echo off.
	Stdout io.Writer
	// Logger receives the emitter's logs. Default: none.
	Logger *slog.Logger
	// Dial connects to the receiver. Default a net.Dialer with DialTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// OnCommit, if set, is called after each spool commit made by Emit with
	// how long it took, how many events it held and its error: a hook for
	// a latency histogram (see package emitter/metrics). It must be quick.
	OnCommit func(d time.Duration, events int, err error)
	// ReplayWindow and ReplayLinger bound the replay window: an event the
	// receiver has read stays in the spool, to be resent if the receiver
	// hangs up, until it is known handled. A receiver reads ahead of what
	// it handles (cloud-event-proxy's bufio.Scanner reads up to 4 KiB at a
	// time), so without the window the events it read but had not handled
	// when it died are lost.
	//
	// ReplayWindow 0 (the default) on a Unix socket sizes the window by the
	// receiver's last read: a receiver that reads sequentially (read, handle
	// every complete line, read again: cloud-event-proxy, any
	// bufio.Scanner loop) reads again only after handling what it read, so
	// only its last read can be unhandled; SIOCOUTQ shows each read's size.
	// After a hang-up, about one read's worth arrives again (the measured
	// counts are in docs/delivery.md, "The replay window"). A positive ReplayWindow is a fixed size instead: an
	// event is handled once the receiver has read ReplayWindow bytes after
	// it, for a receiver that hands lines to another goroutine (then reads
	// prove nothing of handling). Over TCP a "read" means the receiver's
	// kernel took the bytes, and that kernel can hold megabytes the
	// receiver never reads if it dies: with ReplayWindow 0 an event is
	// handled only by ReplayLinger. A negative ReplayWindow turns the
	// window off: events are acknowledged once read.
	//
	// In every mode, an event read at least ReplayLinger ago by a receiver
	// still connected is handled; Flush, and so `evspool run` at the end of
	// its input, waits up to ReplayLinger after the last read. Default 2 s.
	ReplayWindow int
	ReplayLinger time.Duration
	// MaxAttempts is how many failures of the receiver with an event shown
	// to be the culprit (see package doc, "Poison events") set it aside in
	// the dead-letter file (dead-letters in the spool directory). The
	// count is kept in the spool across restarts. Default 3; negative:
	// never set anything aside.
	MaxAttempts int
	// MaxDeadLetterBytes is the dead-letter file's size at which it is
	// rotated (to dead-letters.1, replacing the older one). Default
	// 16 MiB.
	MaxDeadLetterBytes int64
	// AckOnWrite acknowledges events once written instead of once read by
	// the receiver. It is what happens anyway where the read cannot be seen
	// (not Linux, or a connection other than Unix stream or TCP). Default
	// false.
	AckOnWrite bool

	// Clock times everything the emitter times: the stamps on events and
	// their ages (MaxAge), the hold (MaxHold), dial pauses, the replay
	// linger, stalls, every wait and poll, Flush and the warnings' rate.
	// Only socket deadlines (DialTimeout, WriteTimeout on one system
	// call) run on real time. A test can drive a whole emitter on a fake
	// clock. Default: the system clock, with ages on CLOCK_BOOTTIME.
	Clock Clock
}

// Clock is the emitter's time source: the wall clock (Now), a clock that
// counts through suspend and ignores wall-clock steps (Boot), the boot's
// identity (BootID: events of an earlier boot are aged on the wall clock)
// and timers. A program implements it with these exported types only.
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
	if c.Network != "unix" && c.Network != "tcp" {
		return c, fmt.Errorf("emitter: network %q is not supported: use unix or tcp", c.Network)
	}
	setDefault(&c.MaxEventSize, DefaultMaxEventSize)
	setDefault(&c.DialTimeout, DefaultDialTimeout)
	setDefault(&c.WriteTimeout, DefaultWriteTimeout)
	setDefault(&c.StallTimeout, DefaultStallTimeout)
	c.StallTimeout = max(c.StallTimeout, c.WriteTimeout)
	setDefault(&c.BatchEvents, DefaultBatchEvents)
	setDefault(&c.BatchBytes, DefaultBatchBytes)
	setDefault(&c.MinBackoff, DefaultMinBackoff)
	setDefault(&c.MaxBackoff, DefaultMaxBackoff)
	setDefault(&c.WarnInterval, DefaultWarnInterval)
	setDefault(&c.ReplayLinger, DefaultReplayLinger)
	setDefault(&c.MaxAttempts, DefaultMaxAttempts)
	setDefault(&c.MaxDeadLetterBytes, ledger.DefaultMaxDeadLetterBytes)
	if c.ReplayLinger < 0 {
		return c, fmt.Errorf("emitter: ReplayLinger %v is negative: give a positive duration", c.ReplayLinger)
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.System()
	}
	if c.MaxHold < 0 {
		return c, fmt.Errorf("emitter: MaxHold %v is negative: give a positive duration, or 0 for holds that last until Release", c.MaxHold)
	}
	if c.MaxAge < 0 {
		return c, fmt.Errorf("emitter: MaxAge %v is negative: give a positive age, or 0 for none", c.MaxAge)
	}
	if c.Dial == nil {
		d := &net.Dialer{Timeout: c.DialTimeout}
		c.Dial = d.DialContext
	}
	if c.MaxEventSize < 2 {
		return c, fmt.Errorf("emitter: MaxEventSize %d is too small", c.MaxEventSize)
	}
	return c, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
