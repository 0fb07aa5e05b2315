package emitter_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/evspool/evspool/emitter"
)

// A daemon embeds an Emitter: Open it once at start, Emit each event (it
// returns once the event is committed to the spool; delivery happens in the
// background, in order, across receiver restarts), Flush when it wants
// everything delivered, and Close at exit (what is undelivered stays spooled
// for the next Open).
func Example() {
	dir, err := os.MkdirTemp("", "evspool-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "events.sock") // /cloud-native/events.sock in production
	received := receiver(sock)

	em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{
		Stdout: io.Discard,                    // the daemon logs its events itself
		Logger: slog.New(slog.DiscardHandler), // or the daemon's logger
		// This receiver handles each line as it reads it: Flush need not
		// wait the default 2 s for it to be done (docs/delivery.md).
		ReplayLinger: 50 * time.Millisecond,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	for _, ev := range []string{
		"ptp4l[72530.751]: [ptp4l.0.config] port 1 (ens1f0): LISTENING to UNCALIBRATED on RS_SLAVE",
		"ptp4l[72530.885]: [ptp4l.0.config] port 1 (ens1f0): UNCALIBRATED to SLAVE on MASTER_CLOCK_SELECTED",
	} {
		if err := em.Emit(ctx, []byte(ev)); err != nil {
			log.Printf("event not spooled: %v", err) // it was still echoed; go on
		}
	}

	flushCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := em.Flush(flushCtx); err != nil {
		log.Printf("not everything delivered yet: %v", err)
	}
	if err := em.Close(ctx); err != nil {
		log.Print(err)
	}
	fmt.Println(<-received)
	fmt.Println(<-received)
	fmt.Println("pending:", em.Stats().Pending)
	// Output:
	// ptp4l[72530.751]: [ptp4l.0.config] port 1 (ens1f0): LISTENING to UNCALIBRATED on RS_SLAVE
	// ptp4l[72530.885]: [ptp4l.0.config] port 1 (ens1f0): UNCALIBRATED to SLAVE on MASTER_CLOCK_SELECTED
	// pending: 0
}

// receiver stands in for cloud-event-proxy: it listens on a Unix socket and
// passes on each line it reads.
func receiver(sock string) <-chan string {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer ln.Close()
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		sc := bufio.NewScanner(conn)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}
