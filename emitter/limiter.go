package emitter

import (
	"log/slog"
	"sync"
	"time"
)

// limiter lets one warning through per interval and counts the rest, so a
// fault that lasts hours logs a line every 30 s, not one per event.
type limiter struct {
	mu         sync.Mutex
	interval   time.Duration
	last       time.Time
	suppressed int
}

func (l *limiter) log(lg *slog.Logger, msg string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.suppressed++
		return
	}
	if l.suppressed > 0 {
		args = append(args, "suppressed_since_last", l.suppressed)
	}
	l.last, l.suppressed = now, 0
	lg.Warn(msg, args...)
}
