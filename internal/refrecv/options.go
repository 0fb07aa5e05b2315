package refrecv

import (
	"bufio"
	"io"
	"log/slog"
	"time"
)

// DefaultMaxLine is the longest line, newline included, that the receiver
// reads: bufio.MaxScanTokenSize, the limit of cloud-event-proxy's scanner.
const DefaultMaxLine = bufio.MaxScanTokenSize

// defaultDrainTimeout bounds how long Close reads what is already buffered.
const defaultDrainTimeout = 2 * time.Second

// Options tunes a Receiver. The zero value means defaults.
type Options struct {
	// Out, if set, gets every line followed by "\n", in arrival order. Writes
	// happen while the line is recorded, so a slow Out slows the receiver.
	Out io.Writer
	// MaxLine is the longest line, newline included. A longer line ends its
	// connection with bufio.ErrTooLong. Default DefaultMaxLine (64 KiB).
	MaxLine int
	// Rate, if positive, limits reading to that many lines per second across
	// all connections, so data backs up in the socket buffers. The scanner
	// still reads ahead up to its buffer (4 KiB, more for long lines), so
	// the kernel sees those bytes as read before they are recorded.
	// Default 0: as fast as possible.
	Rate float64
	// HandleTime, if positive, is how long each line takes to handle before
	// it is recorded, as in cloud-event-proxy, whose scanner reads ahead of
	// what it has handled: Kill then loses the lines read but not yet
	// handled (Close still records them). Default 0: recorded when read.
	HandleTime time.Duration
	// NeverRead makes the receiver accept connections and never read from
	// them, like a receiver stuck in a bug. Close and Kill then lose
	// everything the peers sent.
	NeverRead bool
	// CountOnly counts lines and writes them to Out without keeping them:
	// Lines and Received return nothing. For a long-running sink.
	CountOnly bool
	// StripCR drops one '\r' before the '\n', as bufio.ScanLines does.
	// Default false: lines are recorded byte for byte.
	StripCR bool
	// DrainTimeout bounds how long Close keeps reading what peers had
	// already sent. Default 2s.
	DrainTimeout time.Duration
	// Logger gets connection errors and accept failures. Default: discard.
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MaxLine <= 0 {
		out.MaxLine = DefaultMaxLine
	}
	if out.DrainTimeout <= 0 {
		out.DrainTimeout = defaultDrainTimeout
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}
