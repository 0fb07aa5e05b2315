package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

// Defaults of Config.
const (
	DefaultDuration = 10 * time.Second
	DefaultRate     = 1000
)

// Config sets up a demo run.
type Config struct {
	// Binary is the evspool executable run as the emitter ("run"). Required.
	Binary string
	// Duration is how long events are produced. Default 10 s; the faults
	// happen at fixed fractions of it.
	Duration time.Duration
	// Rate is events produced per second. Default 1000.
	Rate int
	// Out gets the narrative and the summary. Default io.Discard.
	Out io.Writer
	// Logs gets the evspool children's logs. Default: discarded.
	Logs io.Writer
}

// demo is one run's state.
type demo struct {
	cfg     Config
	dir     string
	sockA   string // evspool's receiver
	sockB   string // the reconnect-only sender's receiver
	spool   string
	rcvA    *refrecv.Receiver
	rcvB    *refrecv.Receiver
	naive   *naiveSender
	start   time.Time
	tpl     []string
	crashes int // receiver crashes
	kills   int // evspool SIGKILLs

	faultMarks []fault // replays.go

	mu       sync.Mutex // held by the producer per event, by a restart throughout
	em       *emitterProc
	produced []string
	feedErr  error
}

// Run runs the demo on a temporary directory it removes afterwards, and
// returns the summary, which it has also printed to cfg.Out.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	cfg = cfg.withDefaults()
	if cfg.Binary == "" {
		return nil, errors.New("demo: no evspool binary given")
	}
	dir, err := os.MkdirTemp("", "evspool-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	d := &demo{cfg: cfg, dir: dir, tpl: templates(),
		sockA: filepath.Join(dir, "a.sock"), sockB: filepath.Join(dir, "b.sock"), spool: filepath.Join(dir, "spool")}
	if err := d.setUp(); err != nil {
		d.tearDown()
		return nil, err
	}
	defer d.tearDown()
	return d.play(ctx)
}

func (c Config) withDefaults() Config {
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Rate <= 0 {
		c.Rate = DefaultRate
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Logs == nil {
		c.Logs = io.Discard
	}
	return c
}

func (d *demo) setUp() error {
	var err error
	if d.rcvA, err = refrecv.Start("unix", d.sockA, nil); err != nil {
		return err
	}
	if d.rcvB, err = refrecv.Start("unix", d.sockB, nil); err != nil {
		return err
	}
	d.naive = startNaive(d.sockB)
	d.em, err = d.startEmitter()
	return err
}

func (d *demo) startEmitter() (*emitterProc, error) {
	return startEmitter(d.cfg.Binary, []string{"--socket", d.sockA, "--spool", d.spool, "--drain-timeout", "30s"}, d.cfg.Logs)
}

func (d *demo) tearDown() {
	if d.em != nil {
		d.em.kill()
	}
	for _, r := range []*refrecv.Receiver{d.rcvA, d.rcvB} {
		if r != nil {
			r.Kill()
		}
	}
}

// play produces the events while the faults happen, then lets both senders
// finish and compares what arrived.
func (d *demo) play(ctx context.Context) (*Summary, error) {
	total := int(d.cfg.Duration.Seconds() * float64(d.cfg.Rate))
	d.say("working in %s (removed at the end)", d.dir)
	d.say("%d PTP events at %d/s through evspool (pid %d) and through a reconnect-only sender, side by side; same faults for both",
		total, d.cfg.Rate, d.em.pid())
	d.start = time.Now()
	produced := make(chan struct{})
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { defer close(produced); d.produce(pctx, total) }()
	err := d.faults(pctx)
	if err != nil {
		stop()
	}
	<-produced
	if err == nil {
		err = errors.Join(ctx.Err(), d.feedErr)
	}
	if err != nil {
		return nil, err
	}
	d.say("all %d events produced; letting both senders finish", total)
	if err := d.finish(); err != nil {
		return nil, err
	}
	s := d.summarize(time.Since(d.start))
	s.Print(d.cfg.Out)
	return s, nil
}

// produce hands the events to both senders at the configured rate.
func (d *demo) produce(ctx context.Context, total int) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for i := 0; i < total; {
		due := min(total, int(time.Since(d.start).Seconds()*float64(d.cfg.Rate))+1)
		for ; i < due; i++ {
			if !d.feed(event(d.tpl, i)) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *demo) feed(line string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.produced = append(d.produced, line)
	d.naive.send(line)
	if err := d.em.write(line); err != nil {
		d.feedErr = err
		return false
	}
	return true
}

// finish closes evspool's input and waits for it to deliver and exit, lets
// the reconnect-only sender send its queue, and stops both receivers
// gracefully (they read what is buffered).
func (d *demo) finish() error {
	d.mu.Lock()
	em := d.em
	d.mu.Unlock()
	code, err := em.finish(30 * time.Second)
	if err != nil {
		return err
	}
	d.em = nil
	d.naive.close()
	d.rcvA.Close()
	d.rcvB.Close()
	d.say("evspool delivered its spool and exited with status %d", code)
	return nil
}

// say prints one line of the narrative with the time since the start.
func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.cfg.Out, "%5.1fs  %s\n", d.since(), fmt.Sprintf(format, args...))
}

// since is the seconds since the start, 0 before it.
func (d *demo) since() float64 {
	if d.start.IsZero() {
		return 0
	}
	return time.Since(d.start).Seconds()
}
