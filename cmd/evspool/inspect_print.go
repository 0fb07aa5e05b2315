package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/evspool/evspool/cmd/evspool/internal/units"
)

func printJSON(w io.Writer, rep *report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func printTable(w io.Writer, rep *report, dump int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("spool", "%s", rep.Spool)
	if rep.State == "in_use" {
		printLive(row, rep)
	} else {
		row("state", "stopped (read from the spool file)")
	}
	f := rep.figures
	row("pending events", "%d", f.PendingEvents)
	row("pending bytes", "%d (%s)", f.PendingBytes, units.FormatSize(int64(f.PendingBytes)))
	row("file bytes", "%d (%s)", f.FileBytes, units.FormatSize(f.FileBytes))
	row("oldest seq", "%d", f.OldestSeq)
	row("newest seq", "%d", f.NewestSeq)
	row("oldest age", "%s", seconds(f.OldestAgeSeconds))
	row("expired events", "%d (older than --max-age, dropped unsent)", f.ExpiredEvents)
	row("dropped events", "%d (drop-oldest %d, drop-newest %d)", f.DroppedEvents, f.DroppedOldestEvents, f.DroppedNewestEvents)
	row("refused events", "%d (over --max-event-size, or not a line: never spooled)", f.RefusedEvents)
	row("unreadable events", "%d (in a damaged spool file, not recovered by its salvage)", f.UnreadableEvents)
	if f.StateKeys > 0 {
		row("state keys", "%d (the newest event of each, written first on a new connection: --state-key)", f.StateKeys)
	}
	if rep.Status != nil {
		row("not spooled events", "%d (echoed, not spooled: disk full, I/O error; %s)", rep.NotSpooledEvents, whose(rep))
	}
	if dl := rep.DeadLetters; dl != nil {
		row("dead letters", "%d in %s (list: --dead-letters)%s", dl.Events, dl.File, dl.Error)
	}
	if rep.State == "stopped" && rep.Status != nil && rep.Status.LastError != "" {
		row("last run's last error", "%s", rep.Status.LastError)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if dump > 0 {
		return printEvents(w, rep)
	}
	return nil
}

// whose says which process a figure from the status file is of.
func whose(rep *report) string {
	if rep.State == "in_use" {
		return "this run's"
	}
	return "the last run's"
}

// printLive shows the status of the process that holds the spool.
func printLive(row func(k, format string, args ...any), rep *report) {
	st, ago := rep.Status, seconds(*rep.StatusAgeSeconds)
	row("state", "IN USE by a running evspool (pid %d); figures from its status file, written %s ago (at its last change)", st.PID, ago)
	if len(st.Command) > 0 {
		row("command", "%s (pid %d)", strings.Join(st.Command, " "), st.ChildPID)
	}
	row("started", "%s", st.StartedAt.Format(time.RFC3339))
	row("receiver", "%s %s (connected: %t)", st.Network, st.Socket, st.Connected)
	if st.MetricsAddr != "" {
		row("metrics", "http://%s/metrics", st.MetricsAddr)
	}
	row("delivered events", "%d (emitted %d, reconnects %d)", st.DeliveredEvents, st.EmittedEvents, st.Reconnects)
	if st.UnprovenEvents > 0 {
		row("unproven events", "%d (acknowledged without proof the receiver handled them: over TCP its kernel took them)", st.UnprovenEvents)
	}
	if st.LastError != "" && st.LastErrorAt != nil {
		row("last error", "%s (at %s)", st.LastError, st.LastErrorAt.Format(time.RFC3339))
	}
}

func printEvents(w io.Writer, rep *report) error {
	if rep.State == "in_use" {
		_, err := fmt.Fprintln(w, "\n--dump: the spool is in use; stop that evspool to see its events")
		return err
	}
	fmt.Fprintf(w, "\noldest %d pending events (of %d):\n", len(rep.Events), rep.PendingEvents)
	for _, ev := range rep.Events {
		if _, err := fmt.Fprintf(w, "%d\t%s\t%s\n", ev.Seq, ev.Time.Format(time.RFC3339Nano), printable(ev.Data)); err != nil {
			return err
		}
	}
	return nil
}

// printable returns s as it is, or quoted if it holds control characters or
// invalid UTF-8, so that a dump cannot play tricks with the terminal.
func printable(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
