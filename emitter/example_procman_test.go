package emitter_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/evspool/evspool/emitter"
)

// depProc is a process that runs beside a parent and writes its status
// through the parent's Writer, as gpsd, gpspipe, pmc and dpll do beside
// ptp4l or ts2phc in linuxptp-daemon.
type depProc struct {
	name, cfg string
	w         io.Writer // the parent's Writer of its latest start
}

func (d *depProc) processStatus(w io.Writer, status int) {
	if w != nil {
		d.w = w
	}
	fmt.Fprintf(d.w, "%s[0]:[%s] PTP_PROCESS_STATUS:%d\n", d.name, d.cfg, status)
}

// ptpProc is one child process: a new Writer at each start, its status
// lines and its dependents' through that Writer, its stdout into it.
type ptpProc struct {
	name, cfg string
	deps      []*depProc
	w         *emitter.Writer
	done      chan error
}

func (p *ptpProc) start(em *emitter.Emitter) error {
	p.w = em.Writer()
	p.w.OnError = func(err error) { log.Print(err) } // keep the child's output flowing
	fmt.Fprintf(p.w, "%s[0]:[%s] PTP_PROCESS_STATUS:1\n", p.name, p.cfg)
	for _, d := range p.deps {
		d.processStatus(p.w, 1)
	}
	cmd := exec.Command("sh", "-c", `echo "$0[1.0]: [$1] port 1: LISTENING"; echo "$0[2.0]: [$1] port 1: SLAVE"`, p.name, p.cfg)
	cmd.Stdout = p.w
	if err := cmd.Start(); err != nil {
		return err
	}
	p.done = make(chan error, 1)
	go func() { p.done <- cmd.Wait() }()
	return nil
}

// stop waits for the child (the real daemon signals it first), writes the
// "down" statuses and closes the Writer.
func (p *ptpProc) stop() {
	if err := <-p.done; err != nil {
		log.Print(err)
	}
	for _, d := range p.deps {
		d.processStatus(nil, 0)
	}
	fmt.Fprintf(p.w, "%s[0]:[%s] PTP_PROCESS_STATUS:0\n", p.name, p.cfg)
	p.w.Close()
}

// manager is the daemon's process manager: one Emitter for all processes.
type manager struct {
	em    *emitter.Emitter
	procs []*ptpProc
}

// applyProfile shuts the live gate (the receiver is told to restart and
// replay its state; nothing live may reach it before), stops the old
// processes and starts the profile's.
func (m *manager) applyProfile(profile string) error {
	m.em.Hold()
	m.stopAll()
	cfg := func(name string) string { return name + "." + profile + ".config" }
	m.procs = []*ptpProc{
		{name: "ptp4l", cfg: cfg("ptp4l"), deps: []*depProc{{name: "gpsd", cfg: cfg("ts2phc")}}},
		{name: "phc2sys", cfg: cfg("phc2sys")},
	}
	for _, p := range m.procs {
		if err := p.start(m.em); err != nil {
			return err
		}
	}
	return nil
}

func (m *manager) stopAll() {
	for _, p := range m.procs {
		p.stop()
	}
	m.procs = nil
}

// waitOutput waits until every child has exited, its output spooled.
func (m *manager) waitOutput() {
	for _, p := range m.procs {
		err := <-p.done
		p.done <- err // for stop
	}
}

// A daemon shaped like linuxptp-daemon: a process manager whose children
// each get a Writer, with dependents writing through their parent's; the
// live gate shut at each profile apply and opened once the receiver has
// replayed its state, CMD LIVE_START written first again then (the
// preamble, which respects its context); Flush and Close at stop.
func Example_processManager() {
	dir, err := os.MkdirTemp("", "evspool-procman")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "events.sock")
	rcv := listenLines(sock)

	em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{
		Stdout:            io.Discard,
		MaxHold:           time.Minute, // the daemon's safety timeout of its gate
		PreambleOnRelease: true,
		// This receiver handles a line as it reads it: Flush need not wait
		// the default 2 s for it (a daemon keeps the default).
		ReplayLinger: 10 * time.Millisecond,
		Preamble: func(ctx context.Context, w io.Writer) error {
			if err := ctx.Err(); err != nil { // Close: give up, do not wait
				return err
			}
			_, err := fmt.Fprintln(w, "CMD LIVE_START")
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := &manager{em: em}

	for _, profile := range []string{"0", "1"} {
		if err := m.applyProfile(profile); err != nil {
			log.Fatal(err)
		}
		m.waitOutput()
		fmt.Printf("profile %s applied, held: %d spooled, %d of its lines received\n",
			profile, em.Stats().Pending, rcv.count("."+profile+".config"))
		em.Release() // the receiver has replayed its state
		if err := em.Flush(ctx); err != nil {
			log.Fatal(err)
		}
	}

	m.stopAll() // stop: the last statuses, then deliver what is spooled
	if err := em.Flush(ctx); err != nil {
		log.Printf("not everything delivered: %v", err)
	}
	if err := em.Close(ctx); err != nil {
		log.Print(err)
	}
	for i, seg := range rcv.segments("CMD LIVE_START") {
		fmt.Printf("connection's live part %d:\n", i+1)
		for _, l := range seg {
			fmt.Println(" ", l)
		}
	}
	// Output:
	// profile 0 applied, held: 7 spooled, 0 of its lines received
	// profile 1 applied, held: 10 spooled, 0 of its lines received
	// connection's live part 1:
	//   gpsd[0]:[ts2phc.0.config] PTP_PROCESS_STATUS:1
	//   phc2sys[0]:[phc2sys.0.config] PTP_PROCESS_STATUS:1
	//   phc2sys[1.0]: [phc2sys.0.config] port 1: LISTENING
	//   phc2sys[2.0]: [phc2sys.0.config] port 1: SLAVE
	//   ptp4l[0]:[ptp4l.0.config] PTP_PROCESS_STATUS:1
	//   ptp4l[1.0]: [ptp4l.0.config] port 1: LISTENING
	//   ptp4l[2.0]: [ptp4l.0.config] port 1: SLAVE
	// connection's live part 2:
	//   gpsd[0]:[ts2phc.0.config] PTP_PROCESS_STATUS:0
	//   gpsd[0]:[ts2phc.1.config] PTP_PROCESS_STATUS:0
	//   gpsd[0]:[ts2phc.1.config] PTP_PROCESS_STATUS:1
	//   phc2sys[0]:[phc2sys.0.config] PTP_PROCESS_STATUS:0
	//   phc2sys[0]:[phc2sys.1.config] PTP_PROCESS_STATUS:0
	//   phc2sys[0]:[phc2sys.1.config] PTP_PROCESS_STATUS:1
	//   phc2sys[1.0]: [phc2sys.1.config] port 1: LISTENING
	//   phc2sys[2.0]: [phc2sys.1.config] port 1: SLAVE
	//   ptp4l[0]:[ptp4l.0.config] PTP_PROCESS_STATUS:0
	//   ptp4l[0]:[ptp4l.1.config] PTP_PROCESS_STATUS:0
	//   ptp4l[0]:[ptp4l.1.config] PTP_PROCESS_STATUS:1
	//   ptp4l[1.0]: [ptp4l.1.config] port 1: LISTENING
	//   ptp4l[2.0]: [ptp4l.1.config] port 1: SLAVE
}

// lineRecv stands in for cloud-event-proxy: it reads every connection and
// keeps the lines, in order.
type lineRecv struct {
	mu    sync.Mutex
	lines []string
}

func listenLines(sock string) *lineRecv {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	r := &lineRecv{}
	go func() {
		defer ln.Close()
		conn, err := ln.Accept() // one connection: a Hold keeps it
		if err != nil {
			return
		}
		defer conn.Close()
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
		}
	}()
	return r
}

// count is how many lines received so far contain s.
func (r *lineRecv) count(s string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// segments splits the lines at each marker, each part sorted: the
// processes write side by side, so only each one's own order is kept.
// Parts with no line are left out: a connection made before the first Hold
// gets its preamble at once, then again at Release.
func (r *lineRecv) segments(marker string) [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var segs [][]string
	for _, l := range r.lines {
		if l == marker {
			segs = append(segs, nil)
			continue
		}
		if len(segs) == 0 {
			segs = append(segs, nil) // lines before any marker: a bug
		}
		segs[len(segs)-1] = append(segs[len(segs)-1], l)
	}
	segs = slices.DeleteFunc(segs, func(s []string) bool { return len(s) == 0 })
	for _, s := range segs {
		slices.Sort(s)
	}
	return segs
}
