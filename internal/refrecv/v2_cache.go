package refrecv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// V2 message types, as linuxptp-daemon's pkg/ipc names them.
const (
	V2TypeStatusRequest = "status_request"
	V2TypeCacheClear    = "cache_clear"
)

// v2StatusRequest is the line the v2 proxy writes on every accepted
// connection: ipc.Message{Version: 1, Type: status_request} through a
// json.Encoder.
const v2StatusRequest = `{"version":1,"type":"status_request"}` + "\n"

// V2Key is what the v2 proxy keeps one value per: the message type and,
// for the types whose resource address names an interface, the interface.
// os_clock_state (CLOCK_REALTIME) and sync_state (the node's sync-state)
// are node-wide, so their Iface is always "". The profile is not part of
// it: the proxy keys by type and builds the resource from the interface.
type V2Key struct {
	Type  string
	Iface string
}

// String is "type" or "type/iface".
func (k V2Key) String() string {
	if k.Iface == "" {
		return k.Type
	}
	return k.Type + "/" + k.Iface
}

// V2Publish is one cloud event the v2 proxy published: a key whose value
// changed, stamped with the message's own timestamp.
type V2Publish struct {
	Key V2Key
	// Values is the value as the proxy keeps it: the state, the clock
	// class, or the SyncE quality levels.
	Values string
	// Raw is the message's "values" object as it came.
	Raw json.RawMessage
	// Timestamp is the message's timestamp (RFC 3339); zero if it had
	// none or an unparsable one, as the proxy leaves the event's time unset.
	Timestamp time.Time
	// At is when the receiver published it; zero from V2Cache.Handle.
	At time.Time
}

// v2Message is an ipc.Message with its values left raw.
type v2Message struct {
	Version   int             `json:"version"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	Profile   string          `json:"profile"`
	Iface     string          `json:"iface"`
	Values    json.RawMessage `json:"values"`
}

// V2Outcome says what handling one line did.
type V2Outcome int

// What a line did to a V2Cache.
const (
	V2Ignored    V2Outcome = iota // empty, a type the proxy does not map, no values, or unchanged
	V2Unparsable                  // not JSON, or a version other than 1
	V2Cleared                     // cache_clear
	V2Published                   // a value changed: see the returned V2Publish
)

// V2Cache is the v2 proxy's event cache (pkg/cep.EventCache) without the
// socket: the rule that decides what is published, shared by the V2
// receiver and by whoever computes what a fault-free run publishes. It is
// not safe for concurrent use; V2 guards its own with its lock.
type V2Cache struct {
	entries map[V2Key]string
}

// NewV2Cache returns an empty cache, as a freshly started proxy has.
func NewV2Cache() *V2Cache { return &V2Cache{entries: map[V2Key]string{}} }

// Handle applies one line (without its newline) as the proxy's Listen
// does, and returns the publish it causes, if any.
func (c *V2Cache) Handle(line []byte) (V2Outcome, V2Publish) {
	if len(line) == 0 {
		return V2Ignored, V2Publish{}
	}
	var m v2Message
	if err := json.Unmarshal(line, &m); err != nil || m.Version != 1 {
		return V2Unparsable, V2Publish{}
	}
	if m.Type == V2TypeCacheClear {
		clear(c.entries)
		return V2Cleared, V2Publish{}
	}
	val, known, err := v2Value(m.Type, m.Values)
	switch {
	case err != nil:
		return V2Unparsable, V2Publish{} // the proxy's Unmarshal fails on such values
	case !known || len(m.Values) == 0:
		return V2Ignored, V2Publish{}
	}
	key := V2Key{Type: m.Type, Iface: m.Iface}
	if v2NodeWide(m.Type) {
		key.Iface = ""
	}
	if !c.set(key, m.Iface == "", val) {
		return V2Ignored, V2Publish{}
	}
	p := V2Publish{Key: key, Values: val, Raw: bytes.Clone(m.Values)}
	p.Timestamp, _ = time.Parse(time.RFC3339Nano, m.Timestamp)
	return V2Published, p
}

// set stores val under key and reports whether anything changed. A message
// without an interface replaces every value of its type, as the proxy
// replaces the event's whole list of values then.
func (c *V2Cache) set(key V2Key, whole bool, val string) bool {
	if !whole {
		old, ok := c.entries[key]
		c.entries[key] = val
		return !ok || old != val
	}
	changed := false
	for k := range c.entries {
		if k.Type == key.Type && k != key {
			delete(c.entries, k)
			changed = true
		}
	}
	old, ok := c.entries[key]
	c.entries[key] = val
	return changed || !ok || old != val
}

// Current returns a copy of the cache: every key's value.
func (c *V2Cache) Current() map[V2Key]string { return maps.Clone(c.entries) }

// v2NodeWide reports whether a type's resource address leaves the
// interface out.
func v2NodeWide(typ string) bool { return typ == "os_clock_state" || typ == "sync_state" }

// v2Value returns a message's values as the proxy keeps them (the data
// values it builds: the state, the clock class, the SyncE quality levels;
// an offset is not among them); known is false for a type the proxy does
// not map. Values it cannot read are an error, as they fail the proxy's
// ipc.Message decoding.
func v2Value(typ string, raw json.RawMessage) (val string, known bool, err error) {
	var v struct {
		State      string `json:"state"`
		ClockClass uint8  `json:"clock_class"`
		QL         int    `json:"ql"`
		ExtendedQL int    `json:"extended_ql"`
	}
	if len(raw) > 0 {
		err = json.Unmarshal(raw, &v)
	}
	switch typ {
	case "ptp_state", "os_clock_state", "gnss_state", "sync_state", "synce_state":
		return v.State, true, err
	case "clock_class":
		return fmt.Sprint(v.ClockClass), true, err
	case "synce_clock_quality":
		return fmt.Sprintf("ql=%d ext=%d", v.QL, v.ExtendedQL), true, err
	}
	return "", false, nil
}
