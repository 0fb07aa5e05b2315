package refrecv

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
)

// cepEnv carries a child's CEPConfig, as JSON, from StartCEP to MaybeRunCEP.
const cepEnv = "EVSPOOL_REFRECV_CEP"

// DefaultRestartLine is the line that makes a CEP receiver re-execute itself,
// as "CMD RESTART" does to cloud-event-proxy.
const DefaultRestartLine = "CMD RESTART"

// CEPConfig describes a receiver that behaves like cloud-event-proxy's
// (plugins/ptp_operator): an accept loop, one goroutine per connection, a
// default bufio.Scanner (4 KiB buffer growing to 64 KiB for long lines), each
// line handled synchronously before the next is scanned.
type CEPConfig struct {
	Network string // "unix" (default) or "tcp"
	Addr    string // socket path or host:port
	// Out is the file every handled line is appended to, after its handling
	// time, in one write: a line read but not yet handled when the process
	// dies is not in it.
	Out string
	// PerLine is the handling time of one line.
	PerLine time.Duration
	// RestartLine makes the receiver remove its socket and re-execute itself
	// (the same process id) when it handles it. Default DefaultRestartLine.
	RestartLine string
	// HalfClose shuts down the writing side of every accepted connection
	// (shutdown(SHUT_WR)) before reading it: a receive-only peer.
	HalfClose bool
	// CrashFirst makes the first CrashFirst starts die (exit 3) while
	// handling the first line they read, whatever it is: a crash-looping
	// receiver (its downstream is down, say). See cep_crash.go.
	CrashFirst int
	// AcceptDelay is slept before each accept: a receiver slow to take a
	// connection (busy, or a loaded node), to which a burst is written in
	// full before it has accepted.
	AcceptDelay time.Duration
	// GCInterval is how often the child collects garbage, closing the
	// connections whose scanner failed (their goroutine returned, nothing
	// refers to them: Go's finalizer closes them). cloud-event-proxy
	// collects at least every 2 minutes and whenever its heap grows.
	// Default DefaultGCInterval; negative: only when the runtime decides.
	GCInterval time.Duration
	// NoASLR starts the child under setarch -R (address randomisation off,
	// kept across its re-executions): a re-executed receiver then has the
	// same pid, start time and stack as before.
	NoASLR bool
}

// DefaultGCInterval is CEPConfig.GCInterval's default: short, so that tests
// see a failed connection closed as they would in production after a while.
const DefaultGCInterval = time.Second

// Starts is the file a CEP receiver appends one line to each time it starts
// listening, re-executions included: Out with ".starts" added.
func (c CEPConfig) Starts() string { return c.Out + ".starts" }

// MaybeRunCEP runs a CEP receiver and never returns if this process was
// started by StartCEP (or re-executed itself); otherwise it returns at once.
// A test binary calls it first thing in TestMain.
func MaybeRunCEP() {
	raw := os.Getenv(cepEnv)
	if raw == "" {
		return
	}
	var cfg CEPConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "refrecv cep: bad config:", err)
		os.Exit(2)
	}
	err := runCEP(cfg)
	fmt.Fprintln(os.Stderr, "refrecv cep:", err)
	os.Exit(1)
}

func runCEP(cfg CEPConfig) error {
	if cfg.Network == "" {
		cfg.Network = "unix"
	}
	if cfg.RestartLine == "" {
		cfg.RestartLine = DefaultRestartLine
	}
	if cfg.Network == "unix" {
		_ = os.Remove(cfg.Addr) // socket.Listen removes a stale socket
	}
	ln, err := net.Listen(cfg.Network, cfg.Addr)
	if err != nil {
		return err
	}
	out, err := os.OpenFile(cfg.Out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if err := appendLine(cfg.Starts(), fmt.Sprint(os.Getpid())); err != nil {
		return err
	}
	crash := crashing(cfg)
	go collect(cfg.GCInterval)
	for {
		time.Sleep(cfg.AcceptDelay)
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go cepServe(cfg, c, out, crash)
	}
}

func cepServe(cfg CEPConfig, c net.Conn, out *os.File, crash bool) {
	if cfg.HalfClose {
		if cw, ok := c.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}
	sc := bufio.NewScanner(c)
	for sc.Scan() {
		line := sc.Bytes()
		if crash {
			os.Exit(3) // dies handling it, whatever it is
		}
		if string(line) == cfg.RestartLine {
			if cfg.Network == "unix" {
				_ = os.Remove(cfg.Addr)
			}
			reexec()
		}
		spend(cfg.PerLine, nil)
		if _, err := out.Write(append(append([]byte(nil), line...), '\n')); err != nil {
			fmt.Fprintln(os.Stderr, "refrecv cep: record:", err)
			os.Exit(1)
		}
	}
	if sc.Err() != nil {
		// Like cloud-event-proxy: the goroutine ends without closing the
		// connection, which is never read again and is closed by Go's
		// finalizer at the next garbage collection (see collect).
		return
	}
	_ = c.Close()
}

// collect runs the garbage collector every interval (DefaultGCInterval when
// 0, never when negative), as cloud-event-proxy's runtime does at least every
// 2 minutes: a connection whose scanner failed is closed then.
func collect(interval time.Duration) {
	if interval < 0 {
		return
	}
	if interval == 0 {
		interval = DefaultGCInterval
	}
	for range time.Tick(interval) {
		runtime.GC()
	}
}

// reexec replaces the process with a fresh copy of itself, closing every
// socket (they are close-on-exec): what they held unread is gone.
func reexec() {
	exe, err := os.Executable()
	if err == nil {
		err = syscall.Exec(exe, os.Args, os.Environ())
	}
	fmt.Fprintln(os.Stderr, "refrecv cep: re-exec:", err)
	os.Exit(1)
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	return errors.Join(err, f.Close())
}
