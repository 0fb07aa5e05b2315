package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

func TestParseSyslogNGStats(t *testing.T) {
	answer := strings.Join([]string{
		"SourceName;SourceId;SourceInstance;State;Type;Number",
		"dst.unix-stream;d_out#0;unix-stream,localhost.afunix:/r.sock;a;dropped;2",
		"dst.unix-stream;d_out#0;unix-stream,localhost.afunix:/r.sock;a;queued;7",
		"src.stdin;s_in#0;-;a;msg_size_avg;100",
		"src.stdin;s_in#0;-;a;processed;42",
		"center;;received;a;processed;42",
		"", ".", "",
	}, "\n")
	st, err := parseSyslogNGStats(strings.NewReader(answer))
	if err != nil {
		t.Fatal(err)
	}
	if st != (syslogNGStats{received: 42, queued: 7, dropped: 2}) {
		t.Fatalf("stats %+v, want received 42, queued 7, dropped 2", st)
	}
	if _, err := parseSyslogNGStats(strings.NewReader("src.stdin;s_in#0;-;a;processed;42\n")); err == nil {
		t.Error("an answer without its final \".\" parsed")
	}
	if _, err := parseSyslogNGStats(strings.NewReader("global;x;;a;value;0\n.\n")); err == nil {
		t.Error("an answer without the source's counter parsed")
	}
}

// needSyslogNG skips a test that runs syslog-ng when it is missing. A skip
// is not a pass: the contender is then untested here.
func needSyslogNG(t *testing.T) {
	t.Helper()
	if err := syslogNGAvailable(); err != nil {
		t.Skip(err.Error())
	}
}

// TestSyslogNGPassesLinesThrough: lines with tabs, runs of spaces, a '\r'
// inside, trailing spaces, a '<' where a syslog priority would be and
// non-UTF-8 bytes arrive byte for byte, in order, and Drain sees the queue
// empty. A '\r' that ends a line does not: syslog-ng takes "\r\n" as the
// line's end (evspool passes it on).
func TestSyslogNGPassesLinesThrough(t *testing.T) {
	needSyslogNG(t)
	dir := t.TempDir()
	rcv, err := refrecv.Start("unix", filepath.Join(dir, "r.sock"), &refrecv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Kill()
	s, err := openSyslogNG(rcv.Addr(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := []string{
		"ptp4l[365195.391]: [ptp4l.0.config] master offset -1 s2 freq -3972 path delay 89",
		"<13>Dec  4 18:00:00 host tag: a syslog-looking line",
		"\ttab  two spaces\r inside, trailing spaces  ",
		"bytes \xff\xfe end",
		"a carriage return ends this\r",
	}
	for i := range 200 {
		want = append(want, string(appendEvent(nil, 0, uint64(i))))
	}
	var events [][]byte
	for _, l := range want {
		events = append(events, []byte(l))
	}
	want[4] = strings.TrimSuffix(want[4], "\r")
	if err := s.Emit(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if n := s.Drain(ctx); n != 0 {
		t.Fatalf("Drain left %d queued", n)
	}
	if err := rcv.WaitCount(ctx, len(want)); err != nil {
		t.Fatalf("%v: received %d of %d", err, rcv.Count(), len(want))
	}
	if got := rcv.Lines(); !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("line %d: got %q, want %q", i, got[i], want[i])
			}
		}
		t.Fatalf("got %d lines, want %d", len(got), len(want))
	}
}

// TestSyslogNGDiskBufferSurvivesKill: lines taken while the receiver is
// away are in the disk buffer; after a SIGKILL of syslog-ng a new instance
// on the same files delivers them.
func TestSyslogNGDiskBufferSurvivesKill(t *testing.T) {
	needSyslogNG(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "r.sock")
	s, err := openSyslogNG(sock, dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	var events [][]byte
	for i := range n {
		events = append(events, []byte(fmt.Sprintf("line %d", i)))
	}
	if err := s.Emit(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	// Wait until syslog-ng took every line into its buffer.
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := s.stats()
		if err == nil && st.received == n && st.queued == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("syslog-ng stats %+v (%v), want %d received and queued", st, err, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.kill()
	rcv, err := refrecv.Start("unix", sock, &refrecv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Kill()
	s2, err := openSyslogNG(sock, dir)
	if err != nil {
		t.Fatalf("%v; its log: %s", err, tailFile(filepath.Join(dir, "syslog-ng.log")))
	}
	defer s2.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rcv.WaitCount(ctx, n); err != nil {
		t.Fatalf("%v: received %d of %d after the restart", err, rcv.Count(), n)
	}
	for i, l := range rcv.Lines()[:n] {
		if want := fmt.Sprintf("line %d", i); l != want {
			t.Fatalf("line %d: got %q, want %q", i, l, want)
		}
	}
}
