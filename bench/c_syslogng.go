package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// syslogNGInstall is what the bench says when syslog-ng is missing. The
// bench installs nothing itself.
const syslogNGInstall = "syslog-ng not found in PATH: apt-get install syslog-ng-core"

// syslogNGAvailable returns nil if the syslog-ng contender can run here.
func syslogNGAvailable() error {
	if _, err := exec.LookPath("syslog-ng"); err != nil {
		return errors.New(syslogNGInstall)
	}
	return nil
}

// syslogNGConfig is the configuration of the syslog-ng-reliable contender,
// as syslog-ng's documentation recommends against message loss: a reliable
// disk buffer (every message is written to the buffer file before it is
// taken from the source), flow control on the log path (the source stops
// reading while the destination's window is full, rather than dropping),
// and a short time-reopen so that it reconnects within a second of the
// receiver coming back. stdin is read with flags(no-parse) and written with
// template("${MSG}\n"), so that a line goes out as it came in. The disk
// buffer is not fsync'd: it survives a process kill, not a power cut. A line
// counts as delivered, and leaves the buffer, once write() took it.
func syslogNGConfig(sock, bufDir string) string {
	return fmt.Sprintf(`@version: 3.38
options {
  stats-level(1); stats-freq(0); time-reopen(1); use-dns(no); use-fqdn(no);
  keep-hostname(yes); chain-hostnames(no); create-dirs(no); mark-freq(0);
};
source s_in { stdin(flags(no-parse) log-iw-size(1000) log-msg-size(65536)); };
destination d_out {
  unix-stream(%q template("${MSG}\n")
    disk-buffer(reliable(yes) dir(%q) disk-buf-size(1073741824) mem-buf-size(1048576)));
};
log { source(s_in); destination(d_out); flags(flow-control); };
`, sock, bufDir)
}

// syslogNG is the syslog-ng-reliable contender: a `syslog-ng -F` of its own,
// started by the producer process with everything it keeps (config, persist
// file, control socket, pid file, disk buffer) in the spool directory, and
// fed the events on its stdin. It dies with the producer (Pdeathsig), so the
// harness's SIGKILL of the producer kills it too, and the next producer
// starts another on the same files. Emit returns once the lines are written
// to the pipe: syslog-ng has no point at which the writer learns more.
type syslogNG struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	ctl    string
	exited chan struct{}

	mu      sync.Mutex
	buf     []byte
	written int64 // lines written to its stdin by this process
}

func openSyslogNG(addr, dir string) (*syslogNG, error) {
	if err := syslogNGAvailable(); err != nil {
		return nil, err
	}
	bufDir := filepath.Join(dir, "buffer")
	if err := os.MkdirAll(bufDir, 0o700); err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "syslog-ng.conf")
	if err := os.WriteFile(conf, []byte(syslogNGConfig(addr, bufDir)), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "syslog-ng.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	s := &syslogNG{ctl: filepath.Join(dir, "ctl"), exited: make(chan struct{})}
	s.cmd = exec.Command("syslog-ng", "-F", "--no-caps", "-f", conf, "-R", filepath.Join(dir, "persist"),
		"-c", s.ctl, "-p", filepath.Join(dir, "pid"))
	// Its stdout and stderr go to a file, not to the producer's pipes: the
	// harness reads those to their end.
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	// Ready once its control socket answers: the configuration is loaded and
	// the disk buffer opened.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.stats(); err == nil {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("syslog-ng exited at start: %s", tailFile(filepath.Join(dir, "syslog-ng.log")))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("syslog-ng not answering on %s after 10 s", s.ctl)
		}
	}
}

// Pid is syslog-ng's process id.
func (s *syslogNG) Pid() int { return s.cmd.Process.Pid }

func (s *syslogNG) Emit(_ context.Context, events [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = joinLines(s.buf[:0], events)
	if _, err := s.in.Write(s.buf); err != nil {
		return err
	}
	s.written += int64(len(events))
	return nil
}

// Drain waits until syslog-ng has taken every line this process wrote and
// its destination queue is empty, and returns what the queue still holds.
func (s *syslogNG) Drain(ctx context.Context) int {
	s.mu.Lock()
	written := s.written
	s.mu.Unlock()
	queued := -1
	for {
		st, err := s.stats()
		if err == nil {
			queued = int(st.queued)
			if st.received >= written && st.queued == 0 {
				return 0
			}
		}
		select {
		case <-ctx.Done():
			return max(queued, 0)
		case <-s.exited:
			return max(queued, 0)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Dropped is what syslog-ng's destination counted as dropped.
func (s *syslogNG) Dropped() uint64 {
	st, err := s.stats()
	if err != nil {
		return 0
	}
	return uint64(st.dropped)
}

// Close ends its stdin; syslog-ng exits at EOF, keeping what it has not
// sent in the disk buffer. It is killed if it has not exited 5 s later.
func (s *syslogNG) Close() error {
	_ = s.in.Close()
	select {
	case <-s.exited:
		return nil
	case <-time.After(5 * time.Second):
	}
	s.kill()
	return errors.New("syslog-ng did not exit at EOF within 5 s (killed)")
}

func (s *syslogNG) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// syslogNGStats are the counters Drain and Dropped read.
type syslogNGStats struct {
	received, queued, dropped int64
}

// stats asks syslog-ng's control socket for its counters (what
// `syslog-ng-ctl stats` prints: "STATS\n" answered by CSV lines up to a
// line holding ".").
func (s *syslogNG) stats() (syslogNGStats, error) {
	var st syslogNGStats
	c, err := net.DialTimeout("unix", s.ctl, time.Second)
	if err != nil {
		return st, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "STATS\n"); err != nil {
		return st, err
	}
	return parseSyslogNGStats(c)
}

// parseSyslogNGStats reads the STATS answer: "SourceName;SourceId;
// SourceInstance;State;Type;Number" lines, then ".".
func parseSyslogNGStats(r io.Reader) (syslogNGStats, error) {
	var st syslogNGStats
	sc := bufio.NewScanner(r)
	seen := false
	for sc.Scan() {
		line := sc.Text()
		if line == "." {
			if !seen {
				return st, errors.New("syslog-ng stats: no source counter")
			}
			return st, nil
		}
		f := strings.Split(line, ";")
		if len(f) != 6 {
			continue
		}
		n, err := strconv.ParseInt(f[5], 10, 64)
		if err != nil {
			continue
		}
		switch {
		case f[0] == "src.stdin" && f[4] == "processed":
			st.received, seen = n, true
		case f[0] == "dst.unix-stream" && f[4] == "queued":
			st.queued = n
		case f[0] == "dst.unix-stream" && f[4] == "dropped":
			st.dropped = n
		}
	}
	if err := sc.Err(); err != nil {
		return st, err
	}
	return st, errors.New("syslog-ng stats: answer cut short")
}

// tailFile is the end of a log file, for error messages.
func tailFile(path string) string {
	b, _ := os.ReadFile(path)
	s := strings.TrimSpace(string(b))
	if len(s) > 500 {
		s = s[len(s)-500:]
	}
	return s
}
