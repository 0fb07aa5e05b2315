// Command crossing counts the files and functions of evspool one event
// runs through, from Emit to its removal from the spool: built with
// coverage, it delivers warm-up events, clears the counters, emits one
// event, waits until the receiver has it, Flush has returned and the
// drainer's idle look has committed the acknowledged deletion, and writes
// the counters to the directory -out. The files and functions with a count
// are the crossing. Close comes after and is not in it: run the command
// without GOCOVERDIR, or the counters written at exit would add it.
//
//	cd bench && go build -cover -covermode=atomic -coverpkg=github.com/evspool/evspool/... -o /tmp/crossing ./crossing &&
//	  rm -rf /tmp/cov && mkdir /tmp/cov && /tmp/crossing -out /tmp/cov &&
//	  go tool covdata func -i /tmp/cov | go run ./crossing -count
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"runtime/coverage"
	"strings"
	"time"

	"github.com/evspool/evspool/emitter"
)

func main() {
	count := flag.Bool("count", false, "read go tool covdata func output on stdin and count the files and functions run")
	out := flag.String("out", "", "the directory the coverage counters of the crossing are written to")
	flag.Parse()
	if *count {
		countFuncs(os.Stdin)
		return
	}
	if *out == "" || os.Getenv("GOCOVERDIR") != "" {
		log.Fatal("crossing: give -out DIR and leave GOCOVERDIR unset, or the counters written at exit would count Close as well")
	}
	if err := run(*out); err != nil {
		log.Fatal(err)
	}
}

func run(out string) error {
	dir, err := os.MkdirTemp("", "crossing")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "r.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	got := make(chan string, 1<<12)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				s := bufio.NewScanner(c)
				for s.Scan() {
					got <- s.Text()
				}
			}()
		}
	}()
	e, err := emitter.Open(sock, filepath.Join(dir, "spool"), &emitter.Options{Stdout: io.Discard})
	if err != nil {
		return err
	}
	ctx := context.Background()
	for i := range 300 { // warm: connected, past every first time
		if err := e.Emit(ctx, fmt.Appendf(nil, "warm %d", i)); err != nil {
			return err
		}
		<-got
	}
	if err := flushed(ctx, e); err != nil {
		return err
	}
	if err := coverage.ClearCounters(); err != nil {
		return err
	}
	if err := e.Emit(ctx, []byte("the event")); err != nil {
		return err
	}
	if line := <-got; line != "the event" {
		return fmt.Errorf("got %q", line)
	}
	if err := flushed(ctx, e); err != nil {
		return err
	}
	if err := coverage.WriteMetaDir(out); err != nil {
		return err
	}
	if err := coverage.WriteCountersDir(out); err != nil {
		return err
	}
	return e.Close(ctx)
}

// flushed waits until Flush returns and the idle look has deleted what was
// acknowledged (its look comes within a few hundred milliseconds).
func flushed(ctx context.Context, e *emitter.Emitter) error {
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.Flush(fctx); err != nil {
		return err
	}
	time.Sleep(500 * time.Millisecond)
	return nil
}

// countFuncs counts the lines of go tool covdata func with a coverage above
// 0%, by file, leaving out this command and the total.
func countFuncs(r io.Reader) {
	files, funcs := map[string]bool{}, 0
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 3 || f[0] == "total" || strings.Contains(f[0], "/bench/") || f[len(f)-1] == "0.0%" {
			continue
		}
		files[strings.SplitN(f[0], ":", 2)[0]] = true
		funcs++
	}
	fmt.Printf("%d files, %d functions\n", len(files), funcs)
}
