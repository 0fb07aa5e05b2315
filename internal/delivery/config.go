package delivery

import "time"

// Mode is how an event read by the receiver becomes handled.
type Mode int

const (
	// LastRead: only a sequential receiver's last read can be unhandled.
	LastRead Mode = iota
	// FixedBytes: handled once Config.WindowBytes more were read after it.
	FixedBytes
	// NoWindow: handled once read (or written, where reads are not seen).
	NoWindow
	// KernelTook: TCP, a read is the receiver's kernel's; only linger
	// proves an event handled.
	KernelTook
)

// Config is what delivery needs of the emitter's options.
type Config struct {
	Mode         Mode
	WindowBytes  uint64        // FixedBytes only
	Linger       time.Duration // a line read this long ago, still connected, is handled
	WarnAfter    time.Duration // no read for this long with bytes unread: slow
	StuckAfter   time.Duration // no read for this long inside a line: stuck
	StallAfter   time.Duration // no read for this long with bytes unread: frozen
	WriteTimeout time.Duration // no room in the send buffer for this long: stop waiting for it
	MaxAttempts  int           // strikes that set an event aside; 0: never
	Batch        int           // events per write outside isolation
	Backoff      time.Duration // the first pause before a dial
	MaxBackoff   time.Duration // the longest pause after refused dials
	CrashPause   time.Duration // the longest pause in a crash loop; 0: max(MaxBackoff, 5 s)
	Jitter       float64       // the backoff's randomization factor
	MaxAge       time.Duration // an event older than this is expired, not sent; 0: never
	MaxHold      time.Duration // a hold of the live gate longer than this is released; 0: never
}

// crashLoopMaxPause caps the pause before dialling a receiver that keeps
// failing before it handles anything (at least MaxBackoff).
const crashLoopMaxPause = 5 * time.Second
