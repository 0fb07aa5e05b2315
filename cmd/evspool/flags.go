package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/evspool/evspool/cmd/evspool/internal/units"
	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/wal"
)

// sizeFlag is a byte size given as 64MiB, 1GB, 4096...
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil {
		return ""
	}
	return units.FormatSize(*f.n)
}

func (f sizeFlag) Set(s string) error {
	n, err := units.ParseSize(s)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

// durationFlag is a duration given as 500ms, 2s, 1m30s.
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil || *f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = d
	return nil
}

// policyFlag is --on-full.
type policyFlag struct{ p *wal.Policy }

func (f policyFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f policyFlag) Set(s string) error {
	p, err := wal.ParsePolicy(s)
	if err != nil {
		return fmt.Errorf("use drop-oldest, drop-newest or block, not %q", s)
	}
	*f.p = p
	return nil
}

// maxUnixPath is the longest path a Unix socket address holds on Linux
// (sun_path is 108 bytes, NUL included).
const maxUnixPath = 107

// runFlags are the flags run and exec share.
type runFlags struct {
	socket, spool, network   string
	maxSpool, maxEvent       int64
	onFull                   wal.Policy
	dialTimeout, writeTimout time.Duration
	drainTimeout             time.Duration
	replayWindow             int64 // see delivery_flags.go
	replayLinger             time.Duration
	maxAttempts              int
	fsync                    bool
	metricsAddr              string
	logFormat, logLevel      string

	preamble []string      // --preamble, see preamble.go
	maxAge   time.Duration // --max-age; 0: off
	state    stateFlags    // see state_flags.go

	onReceive func(line []byte) // exec --receiver-to-stdin
}

func (r *runFlags) register(fs *flag.FlagSet) {
	r.maxSpool = wal.DefaultMaxBytes
	r.maxEvent = emitter.DefaultMaxEventSize
	r.dialTimeout = emitter.DefaultDialTimeout
	r.writeTimout = emitter.DefaultWriteTimeout
	r.fsync = true
	r.replayLinger = emitter.DefaultReplayLinger
	r.registerDelivery(fs)
	r.state.register(fs)
	fs.StringVar(&r.socket, "socket", "", "receiver's socket path (or host:port with --network tcp); required")
	fs.StringVar(&r.spool, "spool", "", "spool directory, created 0700 if missing; required")
	fs.StringVar(&r.network, "network", "unix", "unix or tcp")
	fs.Var(sizeFlag{&r.maxSpool}, "max-spool-size", "cap on the spool file's size on disk (KiB/MiB/GiB or KB/MB/GB)")
	fs.Var(policyFlag{&r.onFull}, "on-full", "when the spool is full: drop-oldest, drop-newest or block")
	fs.Var(sizeFlag{&r.maxEvent}, "max-event-size", "largest event accepted, its newline included (cloud-event-proxy reads lines of at most 64KiB, newline included: a larger limit needs a receiver that reads longer lines)")
	fs.Var(durationFlag{&r.dialTimeout}, "dial-timeout", "timeout of each connection attempt")
	fs.Var(durationFlag{&r.writeTimout}, "write-timeout", "timeout of each write, and of a receiver that reads nothing")
	fs.Var(durationFlag{&r.drainTimeout}, "drain-timeout", "after end of input, how long to keep delivering (default: until drained)")
	fs.Var(durationFlag{&r.replayLinger}, "replay-linger", "... or until it stayed connected this long after reading it; at end of input, run waits this long for the last events")
	fs.BoolVar(&r.fsync, "fsync", true, "fsync each spool commit (false survives a process crash, not a power loss)")
	fs.StringVar(&r.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address, e.g. 127.0.0.1:9477 (default off)")
	fs.Var(linesFlag{&r.preamble}, "preamble", "a line written first on every connection, never spooled nor echoed (repeatable)")
	fs.Var(durationFlag{&r.maxAge}, "max-age", "events older than this when their turn comes are dropped unsent and counted (default off)")
	fs.StringVar(&r.logFormat, "log-format", "text", "text or json (logs go to stderr)")
	fs.StringVar(&r.logLevel, "log-level", "info", "debug, info, warn or error")
}

func (r *runFlags) validate() error {
	switch {
	case r.socket == "":
		return fmt.Errorf("--socket is required")
	case r.spool == "":
		return fmt.Errorf("--spool is required")
	case r.network != "unix" && r.network != "tcp":
		return fmt.Errorf("--network must be unix or tcp, not %q", r.network)
	case r.network == "unix" && len(r.socket) > maxUnixPath:
		return fmt.Errorf("--socket path is %d bytes, too long for a Unix socket (at most %d): use a shorter path or a symlinked directory", len(r.socket), maxUnixPath)
	case r.maxSpool < wal.MinMaxBytes:
		return fmt.Errorf("--max-spool-size %s is below the minimum of 1MiB", units.FormatSize(r.maxSpool))
	case r.maxEvent < 2 || r.maxEvent > r.maxSpool/4:
		return fmt.Errorf("--max-event-size %s must be between 2 bytes and a quarter of --max-spool-size", units.FormatSize(r.maxEvent))
	case r.dialTimeout <= 0 || r.writeTimout <= 0:
		return fmt.Errorf("--dial-timeout and --write-timeout must be positive")
	case r.replayLinger <= 0:
		return fmt.Errorf("--replay-linger must be positive")
	}
	if err := r.state.validate(); err != nil {
		return err
	}
	if err := checkMetricsAddr(r.metricsAddr); err != nil {
		return err
	}
	if err := r.checkDropIn(); err != nil { // preamble.go
		return err
	}
	if _, err := parseLevel(r.logLevel); err != nil {
		return err
	}
	if r.logFormat != "text" && r.logFormat != "json" {
		return fmt.Errorf("--log-format must be text or json, not %q", r.logFormat)
	}
	return nil
}

// checkMetricsAddr refuses a --metrics-addr net.Listen could not take: it
// is HOST:PORT (HOST may be empty: every interface), PORT a number.
func checkMetricsAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = strconv.ParseUint(port, 10, 16)
	}
	if err != nil {
		return fmt.Errorf("--metrics-addr %q: give HOST:PORT, e.g. 127.0.0.1:9477 (localhost only) or :9477 (every interface)", addr)
	}
	return nil
}

func (r *runFlags) emitterOptions(logger *slog.Logger) *emitter.Options {
	o := &emitter.Options{
		MaxAge:        r.maxAge,
		Preamble:      preambleFunc(r.preamble),
		Network:       r.network,
		MaxSpoolBytes: r.maxSpool,
		OnFull:        r.onFull,
		NoSync:        !r.fsync,
		MaxEventSize:  int(r.maxEvent),
		DialTimeout:   r.dialTimeout,
		WriteTimeout:  r.writeTimout,
		ReplayWindow:  replayWindow(r.replayWindow),
		ReplayLinger:  r.replayLinger,
		MaxAttempts:   maxAttempts(r.maxAttempts),
		Logger:        logger,
		OnReceive:     r.onReceive,
	}
	r.state.apply(o)
	return o
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", s)
	}
	return l, nil
}

func newLogger(format, level string, w io.Writer) *slog.Logger {
	l, _ := parseLevel(level)
	opts := &slog.HandlerOptions{Level: l}
	if strings.EqualFold(format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
