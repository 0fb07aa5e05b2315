package emitter_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/evspool/evspool/emitter"
)

// lineHandler is a slog.Handler for a daemon that logs with glog or klog:
// each record becomes one line in slog's text format (key=value, quoted as
// needed), without the time and level the daemon's logger adds itself, and
// goes to the function for its level. Its copies (WithAttrs, WithGroup)
// share one buffer under one lock.
type lineHandler struct {
	info, warn, err func(string)
	mu              *sync.Mutex
	buf             *bytes.Buffer
	text            slog.Handler
}

func newLineHandler(info, warn, err func(string)) *lineHandler {
	h := &lineHandler{info: info, warn: warn, err: err, mu: &sync.Mutex{}, buf: &bytes.Buffer{}}
	h.text = slog.NewTextHandler(h.buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{} // the daemon's logger stamps these
			}
			return a
		},
	})
	return h
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *lineHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	h.buf.Reset()
	err := h.text.Handle(ctx, r)
	line := "evspool: " + strings.TrimSuffix(h.buf.String(), "\n")
	h.mu.Unlock()
	switch {
	case r.Level >= slog.LevelError:
		h.err(line)
	case r.Level >= slog.LevelWarn:
		h.warn(line)
	default:
		h.info(line)
	}
	return err
}

func (h *lineHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.text = h.text.WithAttrs(attrs)
	return &c
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.text = h.text.WithGroup(name)
	return &c
}

// A daemon that logs with glog (linuxptp-daemon) or klog gets evspool's
// logs through a small slog.Handler: with glog, pass
// func(s string) { glog.Info(s) }, and glog.Warning and glog.Error the
// same way (klog has the same functions). Here they print, to show the
// lines.
func Example_glog() {
	dir, err := os.MkdirTemp("", "evspool-glog")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	printer := func(level string) func(string) {
		return func(s string) { fmt.Println(level, s) }
	}
	em, err := emitter.Open(filepath.Join(dir, "events.sock"), filepath.Join(dir, "spool"), &emitter.Options{
		Stdout:       io.Discard,
		MaxEventSize: 64,
		Logger:       slog.New(newLineHandler(printer("I"), printer("W"), printer("E"))),
		// A receiver that is there (and gets nothing): no outage to log.
		Dial: func(context.Context, string, string) (net.Conn, error) {
			c, _ := net.Pipe()
			return c, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	w := em.Writer()
	w.OnError = func(error) {} // counted and logged: nothing more to do here
	fmt.Fprintf(w, "ptp4l[1.0]: [ptp4l.0.config] %s\n", strings.Repeat("x", 80))
	if err := em.Close(context.Background()); err != nil {
		log.Print(err)
	}
	// Output:
	// W evspool: msg="events refused, not spooled" events=1 reason=too_large size=110 limit=64 hint="raise --max-event-size (Options.MaxEventSize) or split the line"
}
