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
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/emitter/metrics"
)

// A PTP daemon (linuxptp-daemon, say) runs ptp4l, phc2sys and ts2phc and
// forwards their output to the event socket. With evspool it opens one
// Emitter and gives each child process its own Writer as stdout; the
// preamble hook writes "CMD LIVE_START" first on every connection, once the
// receiver has replayed its state; MaxAge drops what a long outage made
// stale; the metrics collector joins the daemon's registry; and at shutdown
// Flush waits until everything was delivered.
func Example_daemon() {
	dir, err := os.MkdirTemp("", "evspool-daemon")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "events.sock")
	received := collect(sock)
	replayed := make(chan struct{}) // the daemon's "live gate"

	commits := metrics.NewCommitHistogram()
	em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{
		Stdout: io.Discard,
		MaxAge: 10 * time.Minute,
		// collect handles each line as it reads it: Flush need not wait the
		// default 2 s replay linger (docs/delivery.md).
		ReplayLinger: 50 * time.Millisecond,
		OnCommit:     commits.Observe,
		Preamble: func(ctx context.Context, w io.Writer) error {
			select { // may wait as long as it takes: ctx ends only at Close
			case <-replayed:
			case <-ctx.Done():
				return ctx.Err()
			}
			_, err := fmt.Fprintln(w, "CMD LIVE_START")
			return err
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(em, commits))

	var wg sync.WaitGroup
	for _, name := range []string{"ptp4l", "phc2sys", "ts2phc"} {
		w := em.Writer() // one per child: its own partial-line buffer
		cmd := exec.Command("sh", "-c", `for s in LISTENING UNCALIBRATED SLAVE; do echo "$0[72530.751]: [$0.0.config] port 1: $s"; done`, name)
		cmd.Stdout = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cmd.Run(); err != nil {
				log.Print(err)
			}
			fmt.Fprintf(w, "%s[72531]:[%s.0.config] PTP_PROCESS_STATUS:0\n", name, name) // processStatus, unchanged
			w.Close()
		}()
	}
	close(replayed)
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := em.Flush(ctx); err != nil { // shutdown: deliver what is spooled
		log.Printf("not everything delivered: %v", err)
	}
	if err := em.Close(ctx); err != nil {
		log.Print(err)
	}
	mfs, err := reg.Gather() // after Close: the drainer's last count is in
	if err != nil {
		log.Fatal(err)
	}

	lines := <-received
	fmt.Println(lines[0])
	for _, name := range []string{"ptp4l", "phc2sys", "ts2phc"} {
		for _, l := range lines[1:] { // each child's lines in its order
			if strings.HasPrefix(l, name+"[") {
				fmt.Println(l)
			}
		}
	}
	for _, mf := range mfs {
		if mf.GetName() == "evspool_events_delivered_total" {
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output:
	// CMD LIVE_START
	// ptp4l[72530.751]: [ptp4l.0.config] port 1: LISTENING
	// ptp4l[72530.751]: [ptp4l.0.config] port 1: UNCALIBRATED
	// ptp4l[72530.751]: [ptp4l.0.config] port 1: SLAVE
	// ptp4l[72531]:[ptp4l.0.config] PTP_PROCESS_STATUS:0
	// phc2sys[72530.751]: [phc2sys.0.config] port 1: LISTENING
	// phc2sys[72530.751]: [phc2sys.0.config] port 1: UNCALIBRATED
	// phc2sys[72530.751]: [phc2sys.0.config] port 1: SLAVE
	// phc2sys[72531]:[phc2sys.0.config] PTP_PROCESS_STATUS:0
	// ts2phc[72530.751]: [ts2phc.0.config] port 1: LISTENING
	// ts2phc[72530.751]: [ts2phc.0.config] port 1: UNCALIBRATED
	// ts2phc[72530.751]: [ts2phc.0.config] port 1: SLAVE
	// ts2phc[72531]:[ts2phc.0.config] PTP_PROCESS_STATUS:0
	// evspool_events_delivered_total 12
}

// collect stands in for cloud-event-proxy: it reads one connection and,
// when the emitter closes it, hands over every line it read.
func collect(sock string) <-chan []string {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	out := make(chan []string, 1)
	go func() {
		defer ln.Close()
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		var lines []string
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		out <- lines
	}()
	return out
}
