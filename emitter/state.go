package emitter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/evspool/evspool/wal"
)

// State before history (docs/delivery.md, "State keys"): with
// Options.StateKey, the spool keeps the newest event of every key (wal's
// AppendState, in the commit of the append). The drainer writes the state
// on every new connection before anything spooled, and again at the next
// write boundary after the receiver asks for it (Options.StateRequest):
// the newest event of each key whose newest is before the next event the
// connection will carry, in the order they were emitted. A key with a
// newer event still to come gets it through the backlog, so per key the
// receiver never sees an older value after a newer one.

// StateKeyFunc says what an event does to the state: its key (nil: none),
// or that it retires every key before it (clear). See Options.StateKey.
type StateKeyFunc func(event []byte) (key []byte, clear bool)

// JSONStateKey returns a StateKeyFunc for events that are JSON objects:
// the key is the values of fields (top-level), and an event whose "type"
// is clearType (if not empty) clears. A missing field counts as empty, as
// a JSON encoder's omitempty leaves it out (v2's clock-wide states carry no
// iface); an event that is not a JSON object, or has none of the fields,
// has no key.
func JSONStateKey(fields []string, clearType string) StateKeyFunc {
	return func(event []byte) ([]byte, bool) {
		var obj map[string]json.RawMessage
		if len(event) == 0 || event[0] != '{' || json.Unmarshal(event, &obj) != nil {
			return nil, false
		}
		if clearType != "" && jsonString(obj["type"]) == clearType {
			return nil, true
		}
		var key []byte
		found := false
		for i, f := range fields {
			raw, ok := obj[f]
			found = found || ok
			if i > 0 {
				key = append(key, 0)
			}
			if s, isString := jsonStringOK(raw); isString {
				key = append(key, s...)
			} else {
				key = append(key, bytes.TrimSpace(raw)...)
			}
		}
		if !found {
			return nil, false
		}
		return key, false
	}
}

// JSONType returns an Options.StateRequest that matches a JSON object
// whose "type" is typ, such as v2's {"version":1,"type":"status_request"}.
func JSONType(typ string) func(line []byte) bool {
	return func(line []byte) bool {
		var m struct {
			Type *string `json:"type"`
		}
		return len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &m) == nil && m.Type != nil && *m.Type == typ
	}
}

func jsonString(raw json.RawMessage) string {
	s, _ := jsonStringOK(raw)
	return s
}

func jsonStringOK(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// stateOps returns what events do to the state; nil if none has a key.
func (e *Emitter) stateOps(events [][]byte) []wal.StateOp {
	if e.opts.StateKey == nil {
		return nil
	}
	var ops []wal.StateOp
	for i, ev := range events {
		key, clear := e.opts.StateKey(ev)
		if len(key) == 0 && !clear {
			continue
		}
		if ops == nil {
			ops = make([]wal.StateOp, len(events))
		}
		ops[i] = wal.StateOp{Key: key, Clear: clear}
	}
	return ops
}

// stateWarn is the warning of keys the state did not keep: Emit's, as the
// commit that refused them ends, rate-limited like every repeated warning.
type stateWarn struct {
	mu   sync.Mutex
	rep  reporter
	seen uint64 // the refusals counted at the last look
}

// warnStateRefused logs, rate-limited, how many keys the state did not keep
// since Open, when that count rose.
func (e *Emitter) warnStateRefused() {
	if e.opts.StateKey == nil {
		return
	}
	s := &e.stateWarn
	n := e.spool.StateRefused()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n <= s.seen {
		return
	}
	s.seen = n
	s.rep.warn(e.opts.Logger, "keys not kept in the state: it holds its most keys or a quarter of the spool's cap, or a key is longer than 247 bytes",
		"refused_keys", n, "max_state_keys", e.opts.MaxStateKeys,
		"hint", "raise --state-max-keys (Options.MaxStateKeys), or retire keys with a clear line (--state-clear)")
}

// writeState writes the state on the connection (see the top of this
// file), unless nothing was written since the state last was: that answers
// a request too. It counts the lines; the caller drops the connection on
// failure.
func (d *drainer) writeState() error {
	if d.w.stateBefore != 0 && d.w.stateAt == d.w.wroteTo {
		return nil
	}
	last := d.spool.LastSeq()
	next := d.spool.FirstSeq()
	if next == 0 || next > last+1 {
		next = last + 1
	}
	before := max(next, d.w.wroteTo+1)
	entries, err := d.spool.State(before)
	if err != nil {
		return fmt.Errorf("read the state: %w", err)
	}
	if err := d.writeStateLines(entries, false); err != nil {
		return err
	}
	d.w.stateAt, d.w.stateBefore = d.w.wroteTo, before
	return nil
}

// writeGapState writes, before the events from first on, the newest event
// of each key that this connection skipped: removed from the spool before
// it was written here or covered by the state (dropped to make room behind
// the events in flight, or at the head). The receiver so learns every
// key's newest value, in emission order, on the connection it is on.
func (d *drainer) writeGapState(first uint64) error {
	if !d.gapBefore(first) {
		return nil
	}
	from := d.unskipped()
	d.w.gapTo = first - 1
	entries, err := d.spool.StateBetween(from, first)
	if err != nil {
		return fmt.Errorf("read the state: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	return d.writeStateLines(entries, true)
}

// gapBefore reports whether events before first were skipped on this
// connection: neither written on it nor covered by its state.
func (d *drainer) gapBefore(first uint64) bool {
	return d.opts.StateKey != nil && d.w.stateBefore != 0 && first > d.unskipped()
}

// unskipped is the first sequence this connection neither wrote nor covered
// by its state or a gap's.
func (d *drainer) unskipped() uint64 {
	return max(d.w.stateBefore, d.w.wroteTo+1, d.w.gapTo+1)
}

// writeStateLines writes entries as state lines, leaving out those older
// than StateMaxAge or, in a gap, MaxAge (expired, not to be sent).
func (d *drainer) writeStateLines(entries []wal.Entry, gap bool) error {
	buf := d.w.buf[:0]
	n := 0
	now, boot := d.opts.Clock.Now(), d.opts.Clock.Boot()
	for _, e := range entries {
		age := e.Age(now, boot)
		if d.opts.StateMaxAge > 0 && age > d.opts.StateMaxAge || gap && d.opts.MaxAge > 0 && age > d.opts.MaxAge {
			continue
		}
		buf = append(append(buf, e.Data...), '\n')
		n++
	}
	d.w.buf = buf[:0]
	for len(buf) > 0 {
		end := chunkEnd(buf)
		if _, err := d.writeRaw(buf[:end]); err != nil {
			return fmt.Errorf("write the state: %w", err)
		}
		buf = buf[end:]
	}
	d.w.room.ok = false // its writes took no reading after them: the next chunk takes one
	d.record(func(l *linkStats) { l.stateWrites++; l.stateLines += uint64(n) }, nil)
	return nil
}

// awaitRequest waits, on a new connection to a receiver that asks for the
// state (Options.StateRequest), until it asks: such a receiver asks as it
// accepts the connection, so the state written then answers it, and until
// then it is busy with another client, not frozen. Past WriteTimeout, or
// once the receiver can write nothing more, the state is written unasked.
// It fails only when the drainer is stopped.
func (d *drainer) awaitRequest() error {
	if d.opts.StateRequest == nil {
		return nil
	}
	d.pub.health.idle(true)
	defer d.pub.health.idle(false)
	t := d.opts.Clock.NewTimer(d.opts.WriteTimeout)
	defer t.Stop()
	for !d.lis.requested.Swap(false) {
		select {
		case <-d.wake:
		case <-t.C():
			return nil
		case <-d.w.hup:
			return nil // it will write nothing: the hang-up, if it is one, is judged as ever
		case <-d.ctx.Done():
			return d.ctx.Err()
		}
	}
	return nil
}

// answerRequest writes the state if the receiver asked for it.
func (d *drainer) answerRequest() error {
	if d.w.conn == nil || !d.lis.requested.Swap(false) {
		return nil
	}
	return d.writeState()
}

// stateNewer reports whether the state written on this connection holds a
// newer event of e's key: e, resent (the witness), would take the receiver
// back in time. A newer event still pending comes after e: no harm.
func (d *drainer) stateNewer(e wal.Entry) bool {
	if d.opts.StateKey == nil || d.w.stateBefore == 0 {
		return false
	}
	key, _ := d.opts.StateKey(e.Data)
	if len(key) == 0 {
		return false
	}
	entries, err := d.spool.State(d.w.stateBefore)
	if err != nil {
		return true // cannot tell: do not resend it
	}
	for _, s := range entries {
		if k, _ := d.opts.StateKey(s.Data); bytes.Equal(k, key) {
			return s.Seq > e.Seq
		}
	}
	return false
}
