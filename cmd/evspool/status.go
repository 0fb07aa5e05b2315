package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/ledger"
	"github.com/evspool/evspool/wal"
)

// statusFile is the name of the status a running evspool keeps beside its
// spool, for 'evspool inspect' to read while the spool is locked.
const statusFile = "status.json"

const (
	// statusInterval is how often the status is looked at while something
	// happens (events pending, or no connection); the file is rewritten
	// only when what it says changed.
	statusInterval = time.Second
	// statusSettled is how often it is looked at while nothing happens
	// (connected, nothing pending, nothing changed): a line read looks
	// at once. It bounds how stale the file is about an idle receiver
	// that hung up.
	statusSettled = 10 * time.Second
)

// figures are the spool's numbers, as inspect and the status file show them.
type figures struct {
	PendingEvents       uint64  `json:"pending_events"`
	PendingBytes        uint64  `json:"pending_bytes"`
	FileBytes           int64   `json:"file_bytes"`
	OldestSeq           uint64  `json:"oldest_seq"`
	NewestSeq           uint64  `json:"newest_seq"`
	OldestAgeSeconds    float64 `json:"oldest_age_seconds"`
	DroppedEvents       uint64  `json:"dropped_events"`
	DroppedOldestEvents uint64  `json:"dropped_oldest_events"`
	DroppedNewestEvents uint64  `json:"dropped_newest_events"`
	ExpiredEvents       uint64  `json:"expired_events"`    // older than --max-age, dropped unsent
	UnreadableEvents    uint64  `json:"unreadable_events"` // in a damaged spool file, not recovered by its salvage
	RefusedEvents       uint64  `json:"refused_events"`    // refused before the spool (over --max-event-size)
	StateKeys           uint64  `json:"state_keys"`        // keys whose newest event the state keeps (--state-key)
}

// spoolFigures are the figures of a spool of s, whose losses (the
// ledger's count, the kinds the spool records) are lost.
func spoolFigures(s wal.Stats, lost ledger.Losses, now time.Time) figures {
	f := figures{
		PendingEvents:       s.PendingEvents,
		PendingBytes:        s.PendingBytes,
		FileBytes:           s.FileBytes,
		OldestSeq:           s.FirstSeq,
		NewestSeq:           s.LastSeq,
		DroppedOldestEvents: lost[ledger.DroppedOldest],
		DroppedNewestEvents: lost[ledger.DroppedNewest],
	}
	f.DroppedEvents = f.DroppedOldestEvents + f.DroppedNewestEvents
	f.ExpiredEvents = lost[ledger.Expired]
	f.UnreadableEvents, f.RefusedEvents, f.StateKeys = lost[ledger.Unreadable], lost[ledger.Refused], s.StateKeys
	if !s.OldestTime.IsZero() && s.PendingEvents > 0 {
		f.OldestAgeSeconds = max(now.Sub(s.OldestTime).Seconds(), 0)
	}
	return f
}

// status is what the status file holds: who runs the spool, and its figures
// when the file was written.
type status struct {
	Version     string    `json:"version"`
	PID         int       `json:"pid"`
	Command     []string  `json:"command,omitempty"`   // exec: the child's command line
	ChildPID    int       `json:"child_pid,omitempty"` // exec: the child's pid
	Running     bool      `json:"running"`
	StartedAt   time.Time `json:"started_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Network     string    `json:"network"`
	Socket      string    `json:"socket"`
	MetricsAddr string    `json:"metrics_addr,omitempty"`
	MaxBytes    int64     `json:"max_spool_bytes"`
	figures
	Connected       bool       `json:"connected"`
	EmittedEvents   uint64     `json:"emitted_events"`
	DeliveredEvents uint64     `json:"delivered_events"`
	UnprovenEvents  uint64     `json:"unproven_events"` // acknowledged without proof of handling (TCP)
	SpoolErrors     uint64     `json:"spool_errors"`
	DeadLettered    uint64     `json:"dead_lettered_events"`
	Reconnects      uint64     `json:"reconnects"`
	LastError       string     `json:"last_error,omitempty"`
	LastErrorAt     *time.Time `json:"last_error_at,omitempty"`
}

func newStatus(rf *runFlags, command []string) status {
	return status{
		Version: version, PID: os.Getpid(), Command: command, StartedAt: time.Now().UTC(),
		Network: rf.network, Socket: rf.socket, MetricsAddr: rf.metricsAddr, MaxBytes: rf.maxSpool,
	}
}

// update fills in the figures of s.
func (st *status) update(s emitter.Stats, running bool) {
	now := time.Now()
	st.Running, st.UpdatedAt = running, now.UTC()
	sl := s.SpoolLosses()
	st.figures = spoolFigures(s.Spool, ledger.Losses{ledger.DroppedOldest: s.DroppedOldest, ledger.DroppedNewest: s.DroppedNewest,
		ledger.Expired: sl.Expired, ledger.Unreadable: sl.Unreadable, ledger.Refused: sl.Refused}, now)
	st.Connected = s.Connected
	st.EmittedEvents, st.DeliveredEvents, st.UnprovenEvents = s.Emitted, s.Delivered, s.Unproven
	st.SpoolErrors, st.Reconnects = s.SpoolErrors, s.Reconnects
	st.DeadLettered = s.DeadLettered
	st.LastError, st.LastErrorAt = s.LastError, nil
	if !s.LastErrorAt.IsZero() {
		t := s.LastErrorAt.UTC()
		st.LastErrorAt = &t
	}
}

// statusWriter rewrites the status file atomically (temp file, rename)
// when what it says changed, and once more at exit. The time it was
// written (UpdatedAt) and the oldest event's age then are not a change:
// inspect ages them from UpdatedAt.
type statusWriter struct {
	path   string
	em     *emitter.Emitter
	logger *slog.Logger
	poked  chan struct{}

	mu      sync.Mutex
	st      status
	written []byte // st as last written, without its time-dependent fields
	warned  bool
}

func newStatusWriter(dir string, st status, em *emitter.Emitter, logger *slog.Logger) *statusWriter {
	return &statusWriter{path: filepath.Join(dir, statusFile), st: st, em: em, logger: logger, poked: make(chan struct{}, 1)}
}

// poke says a line was emitted: a settled writer looks at once.
func (w *statusWriter) poke() {
	select {
	case w.poked <- struct{}{}:
	default:
	}
}

// run looks at the status every interval while something happens, and
// every settled, or at the next line, while nothing does.
func (w *statusWriter) run(ctx context.Context, every, settled time.Duration) {
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		s := w.em.Stats()
		changed := w.write(s, true)
		wait, poked := every, (<-chan struct{})(nil)
		if !changed && s.Connected && s.Spool.PendingEvents == 0 {
			wait, poked = settled, w.poked
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-poked:
			t.Stop()
		case <-ctx.Done():
			return
		}
	}
}

// setChild records the child exec runs.
func (w *statusWriter) setChild(pid int) {
	w.mu.Lock()
	w.st.ChildPID = pid
	w.mu.Unlock()
	w.write(w.em.Stats(), true)
}

func (w *statusWriter) final(s emitter.Stats) { w.write(s, false) }

// write updates the status from s and writes it if it changed, which it
// returns.
func (w *statusWriter) write(s emitter.Stats, running bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.st.update(s, running)
	key := w.st
	key.UpdatedAt, key.OldestAgeSeconds = time.Time{}, 0
	b, _ := json.Marshal(key)
	if bytes.Equal(b, w.written) {
		return false
	}
	if err := writeFileAtomic(w.path, w.st); err != nil {
		if !w.warned {
			// Once: the status is a convenience, delivery does not depend on it.
			w.warned = true
			w.logger.Warn("cannot write the status file; inspect will show less while evspool runs", "path", w.path, "error", err)
		}
		return true // tried again at the next look
	}
	w.written = b
	return true
}

// writeFileAtomic replaces the file at path, in a spool directory, with v
// as JSON: through the spool's own file handling, never through a link.
func writeFileAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return wal.WriteFile(filepath.Dir(path), filepath.Base(path), append(b, '\n'))
}

// readStatus reads the status file of the spool in dir.
func readStatus(dir string) (*status, error) {
	b, err := wal.ReadFile(dir, statusFile)
	if err != nil {
		return nil, err
	}
	var st status
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("status file %s is not valid: %w", filepath.Join(dir, statusFile), err)
	}
	return &st, nil
}
