package main

import (
	"math"
	"testing"
	"time"
)

func TestParseStatTicks(t *testing.T) {
	// utime 250, stime 31; a command name holding ") (" must not shift the fields.
	line := "4242 (bench) (x) S 1 4242 4242 0 -1 4194560 1200 0 0 0 250 31 0 0 20 0 9 0 12345 1000000 2000 18446744073709551615\n"
	got, err := parseStatTicks(line)
	if err != nil || got != 281 {
		t.Fatalf("parseStatTicks = %d, %v; want 281", got, err)
	}
	for name, bad := range map[string]string{
		"no name":    "4242 bench S 1",
		"too short":  "4242 (bench) S 1 2 3",
		"not number": "4242 (bench) S 1 4242 4242 0 -1 4194560 1200 0 0 0 x 31 0",
	} {
		if _, err := parseStatTicks(bad); err == nil {
			t.Errorf("%s: no error for %q", name, bad)
		}
	}
}

func TestParseSchedstat(t *testing.T) {
	got, err := parseSchedstat("123456789 5000 17\n")
	if err != nil || got != 123456789 {
		t.Fatalf("parseSchedstat = %d, %v", got, err)
	}
	if _, err := parseSchedstat("123 456"); err == nil {
		t.Fatal("two fields accepted")
	}
}

func TestParsePerfCount(t *testing.T) {
	cases := []struct {
		name, out string
		want      int64
		ok        bool
	}{
		{"counted", "# started on Thu Dec  3 07:50:11 2026\n\n1306848,,raw_syscalls:sys_enter,525728644,100.00,,\nEvents disabled\nEvents enabled\n", 1306848, true},
		{"another event first", "5.00,msec,task-clock,1,100.00,,\n77,,raw_syscalls:sys_enter,1,100.00,,\n", 77, true},
		{"never ran", "<not counted>,,raw_syscalls:sys_enter,0,100.00,,\n", 0, true},
		{"not supported", "<not supported>,,raw_syscalls:sys_enter,0,100.00,,\n", 0, false},
		{"missing", "# started on Thu\n\n", 0, false},
		{"garbage count", "12a,,raw_syscalls:sys_enter,0,100.00,,\n", 0, false},
	}
	for _, c := range cases {
		got, err := parsePerfCount(c.out, syscallEvent)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%s: got %d, %v; want %d, ok %v", c.name, got, err, c.want, c.ok)
		}
	}
}

func TestCostWindowFigures(t *testing.T) {
	at := time.Unix(1000, 0)
	a := costSample{cpu: cpuSample{at: at, runNs: 1_000_000, ticks: 10}, events: 50}
	b := costSample{cpu: cpuSample{at: at.Add(2 * time.Second), runNs: 5_000_000, ticks: 10}, events: 250}
	n := int64(3000)
	w := between(a, b, &n)
	if w.Events != 200 || w.CPUNs != 4_000_000 || w.CPUTicks != 0 || w.Seconds != 2 {
		t.Fatalf("between: %+v", w)
	}
	// 4 ms over 200 events: 20 µs an event, 20 ms per 1,000.
	if got := w.cpuMsPer1k(); math.Abs(got-20) > 1e-9 {
		t.Errorf("cpuMsPer1k = %v, want 20", got)
	}
	if got := w.cpuMsPerSec(); math.Abs(got-2) > 1e-9 {
		t.Errorf("cpuMsPerSec = %v, want 2", got)
	}
	if got, ok := w.syscallsPerEvent(); !ok || got != 15 {
		t.Errorf("syscallsPerEvent = %v, %v; want 15", got, ok)
	}
	if got, ok := w.syscallsPerSec(); !ok || got != 1500 {
		t.Errorf("syscallsPerSec = %v, %v; want 1500", got, ok)
	}
	if got := w.eventsPerSec(); got != 100 {
		t.Errorf("eventsPerSec = %v, want 100", got)
	}
	idle := between(a, costSample{cpu: cpuSample{at: at.Add(time.Second)}, events: 50}, nil)
	if idle.cpuMsPer1k() != 0 {
		t.Error("CPU per event without events")
	}
	if _, ok := idle.syscallsPerEvent(); ok {
		t.Error("syscalls per event without a count")
	}
	var none *costWindow
	if _, ok := none.syscallsPerSec(); ok || none.cpuMsPer1k() != 0 {
		t.Error("a missing window has figures")
	}
}

func TestCostRatios(t *testing.T) {
	row := func(c string, rate float64, round int, cpuNs int64) *CostRow {
		return &CostRow{Contender: c, Rate: rate, Round: round, Paced: costWindow{Events: 1000, CPUNs: cpuNs}}
	}
	rows := []*CostRow{
		row(cEvspoolFsync, 100, 0, 300_000_000), row(cLeastDurable, 100, 0, 100_000_000),
		row(cWriteThrough, 100, 0, 10_000_000),
		row(cEvspoolFsync, 100, 1, 200_000_000), row(cLeastDurable, 100, 1, 100_000_000),
		row(cEvspoolFsync, 1000, 0, 150_000_000), // least-durable missing at 1,000/s
	}
	got := costRatios(rows, []float64{100, 1000})
	if len(got) != 1 {
		t.Fatalf("ratios %+v, want one (100/s)", got)
	}
	r := got[0]
	if r.Rate != 100 || r.Of != cEvspoolFsync || r.To != cLeastDurable || len(r.Rounds) != 2 ||
		r.Rounds[0] != 3 || r.Rounds[1] != 2 || r.Median != 2.5 {
		t.Fatalf("ratio %+v, want rounds 3, 2 and median 2.5", r)
	}
}
