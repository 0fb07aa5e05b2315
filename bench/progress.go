package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// progress shows how far a long run is: on a terminal a bar redrawn every
// second, with a line per finished step above it; otherwise (CI logs, pipes)
// one plain line per step.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	start time.Time

	mu    sync.Mutex
	done  int
	label string
	stop  chan struct{}
}

func newProgress(total int) *progress {
	p := &progress{w: os.Stderr, tty: term.IsTerminal(int(os.Stderr.Fd())), total: total, start: time.Now(),
		stop: make(chan struct{})}
	if p.tty {
		go p.tick()
	}
	return p
}

func (p *progress) tick() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		case <-p.stop:
			return
		}
	}
}

// begin announces the step about to run.
func (p *progress) begin(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label = label
	if p.tty {
		p.draw()
	}
}

// end marks a step done with a one-line summary.
func (p *progress) end(summary string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K  %s: %s\n", p.label, summary)
		p.draw()
		return
	}
	fmt.Fprintf(p.w, "[%d/%d %s] %s: %s\n", p.done, p.total, p.elapsed(), p.label, summary)
}

// draw needs mu held.
func (p *progress) draw() {
	const width = 30
	filled := width * min(p.done, p.total) / max(1, p.total)
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	fmt.Fprintf(p.w, "\r\033[K[%s] %d/%d %s  %s", bar, p.done, p.total, p.elapsed(), p.label)
}

// finish stops the redrawing and clears the bar.
func (p *progress) finish() {
	close(p.stop)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K")
	}
	fmt.Fprintf(p.w, "done in %s\n", p.elapsed())
}

func (p *progress) elapsed() string { return time.Since(p.start).Round(time.Second).String() }
