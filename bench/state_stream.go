package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

// ptpV2Messages is a minute of a simulated node's cloud-event-proxy v2
// messages (DESIGN.md's testdata): a T-GM fed by GNSS and a T-BC, nine
// keys over five types, state changes among periodic re-sends of unchanged
// state, about one message in six a change.
//
//go:embed testdata/ptp-v2-messages.ndjson
var ptpV2Messages []byte

// streamMsg is one message of the recorded stream, without its timestamp.
type streamMsg struct {
	Type    string          `json:"type"`
	Profile string          `json:"profile"`
	Iface   string          `json:"iface"`
	Values  json.RawMessage `json:"values"`
}

// parseStream reads NDJSON v2 messages.
func parseStream(data []byte) ([]streamMsg, error) {
	var out []streamMsg
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		var m streamMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return nil, fmt.Errorf("stream line %d: %w", n, err)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("stream: no messages")
	}
	return out, sc.Err()
}

// stream replays recorded messages in order, from the start again at the
// end, each stamped with a fresh timestamp that is later than the one
// before (RFC 3339, ns), so a message's timestamp says when its value was
// the node's state.
type stream struct {
	msgs []streamMsg
	next int
	last time.Time
}

func newStream(msgs []streamMsg) *stream { return &stream{msgs: msgs} }

// line returns the next message as a line (no newline), stamped now.
func (s *stream) line(now time.Time) []byte {
	m := s.msgs[s.next%len(s.msgs)]
	s.next++
	now = now.UTC()
	if !now.After(s.last) {
		now = s.last.Add(time.Microsecond)
	}
	s.last = now
	ts := now.Format(time.RFC3339Nano)
	if m.Iface == "" {
		return fmt.Appendf(nil, `{"version":1,"type":%q,"timestamp":%q,"profile":%q,"values":%s}`, m.Type, ts, m.Profile, m.Values)
	}
	return fmt.Appendf(nil, `{"version":1,"type":%q,"timestamp":%q,"profile":%q,"iface":%q,"values":%s}`,
		m.Type, ts, m.Profile, m.Iface, m.Values)
}

// reference is what a receiver that read every line once, in order, with
// no restart would hold and publish: the yardstick of a run.
type reference struct {
	cache *refrecv.V2Cache
	pubs  []refrecv.V2Publish
}

func newReference() *reference { return &reference{cache: refrecv.NewV2Cache()} }

// add applies one produced line and reports whether it was a change.
func (r *reference) add(line []byte) bool {
	out, p := r.cache.Handle(line)
	if out == refrecv.V2Published {
		r.pubs = append(r.pubs, p)
	}
	return out == refrecv.V2Published
}
