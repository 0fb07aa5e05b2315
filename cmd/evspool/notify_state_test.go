package main

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/wal"
)

func TestNotifyStateStatus(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := start.Add(5 * time.Minute)
	tests := map[string]struct {
		st    emitter.Stats
		child string
		want  string
	}{
		"connected, empty": {st: emitter.Stats{Connected: true, Delivered: 4500},
			want: "0 pending, connected, 4500 delivered, 0 lost"},
		"backlog with its age": {st: emitter.Stats{Connected: true, Pending: 12, Spool: wal.Stats{OldestTime: now.Add(-3 * time.Second)}},
			want: "12 pending (oldest 3s), connected, 0 delivered, 0 lost"},
		"down since the outage began": {st: emitter.Stats{OutageStart: start.Add(2 * time.Minute), Delivered: 7},
			want: "0 pending, receiver down since 10:02:00 (3m0s), 7 delivered, 0 lost"},
		"never connected: since the start": {st: emitter.Stats{},
			want: "0 pending, receiver down since 10:00:00 (5m0s), 0 delivered, 0 lost"},
		"losses": {st: emitter.Stats{Connected: true, SpoolErrors: 2, DeadLettered: 1},
			want: "0 pending, connected, 0 delivered, 3 lost"},
		"exec's command first": {st: emitter.Stats{Connected: true}, child: "ptp4l pid 42",
			want: "ptp4l pid 42: 0 pending, connected, 0 delivered, 0 lost"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := notifyState{started: start}
			require.Equal(t, "READY=1\nSTATUS="+tc.want, s.ready(now, tc.st, tc.child))
		})
	}
}

// The steps of one life: starting (pinging), ready, alive, wedged (no
// pings, said in STATUS), alive again, stopping, then silence.
func TestNotifyStateSteps(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	up := emitter.Stats{Connected: true}
	wedged := errors.New("emitter: not alive: the drainer has not moved for 1m0s")
	s := notifyState{watchdog: true, pingEvery: 13 * time.Second, started: now}
	type step struct {
		name    string
		do      func() (string, bool)
		want    string
		changed bool
	}
	tick := func(alive error) func() (string, bool) {
		return func() (string, bool) { return s.tick(now, up, alive) }
	}
	steps := []step{
		{"begin", func() (string, bool) { return s.begin("opening the spool /s"), false }, "STATUS=opening the spool /s", false},
		{"tick while opening pings", tick(nil), "STATUS=opening the spool /s\nWATCHDOG=1", false},
		{"ready", func() (string, bool) { return s.ready(now, up, ""), false }, "READY=1\nSTATUS=0 pending, connected, 0 delivered, 0 lost", false},
		{"alive, nothing new, no ping due", tick(nil), "", false},
		{"alive, a ping due", func() (string, bool) { now = now.Add(13 * time.Second); return s.tick(now, up, nil) }, "STATUS=0 pending, connected, 0 delivered, 0 lost\nWATCHDOG=1", false},
		{"wedged", tick(wedged), "STATUS=drainer wedged, watchdog pings stopped: 0 pending, connected, 0 delivered, 0 lost", true},
		{"still wedged: nothing new", tick(wedged), "", false},
		{"moves again", tick(nil), "STATUS=0 pending, connected, 0 delivered, 0 lost\nWATCHDOG=1", true},
		{"nothing new, no ping due", func() (string, bool) { now = now.Add(12 * time.Second); return s.tick(now, up, nil) }, "", false},
		{"a ping due", func() (string, bool) { now = now.Add(time.Second); return s.tick(now, up, nil) }, "STATUS=0 pending, connected, 0 delivered, 0 lost\nWATCHDOG=1", false},
		{"a change, no ping due", func() (string, bool) {
			now = now.Add(2 * time.Second)
			return s.tick(now, emitter.Stats{Connected: true, Delivered: 1}, nil)
		}, "STATUS=0 pending, connected, 1 delivered, 0 lost", false},
		{"stop", func() (string, bool) { return s.stop(now, up), false }, "STOPPING=1\nSTATUS=stopping: 0 pending, connected, 0 delivered, 0 lost", false},
		{"silent after stop", tick(nil), "", false},
		{"stop once", func() (string, bool) { return s.stop(now, up), false }, "", false},
	}
	for _, st := range steps {
		msg, changed := st.do()
		require.Equal(t, st.want, msg, st.name)
		require.Equal(t, st.changed, changed, st.name)
	}
}

func TestNotifyStateNoWatchdog(t *testing.T) {
	s := notifyState{}
	s.ready(time.Now(), emitter.Stats{Connected: true}, "")
	msg, _ := s.tick(time.Now(), emitter.Stats{Connected: true}, nil)
	require.NotContains(t, msg, "WATCHDOG=1", "systemd did not ask for pings")
}
