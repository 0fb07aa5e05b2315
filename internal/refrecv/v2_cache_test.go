package refrecv_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/refrecv"
)

// v2Line is a v2 state message; iface "" leaves the field out.
func v2Line(typ, iface, values string, sec int) string {
	ts := time.Date(2026, 5, 12, 21, 0, sec, 0, time.UTC).Format(time.RFC3339Nano)
	if iface == "" {
		return fmt.Sprintf(`{"version":1,"type":%q,"timestamp":%q,"profile":"p","values":%s}`, typ, ts, values)
	}
	return fmt.Sprintf(`{"version":1,"type":%q,"timestamp":%q,"profile":"p","iface":%q,"values":%s}`, typ, ts, iface, values)
}

func TestV2CacheHandle(t *testing.T) {
	ptp := func(iface string) refrecv.V2Key { return refrecv.V2Key{Type: "ptp_state", Iface: iface} }
	locked, holdover := `{"state":"LOCKED"}`, `{"state":"HOLDOVER"}`
	tests := map[string]struct {
		lines     []string
		published []string // key=value of each publish, in order
		current   map[refrecv.V2Key]string
		outcome   refrecv.V2Outcome // of the last line
	}{
		"first value publishes": {
			lines: []string{v2Line("ptp_state", "eth0", locked, 1)}, published: []string{"ptp_state/eth0=LOCKED"},
			current: map[refrecv.V2Key]string{ptp("eth0"): "LOCKED"}, outcome: refrecv.V2Published,
		},
		"unchanged value does not": {
			lines:     []string{v2Line("ptp_state", "eth0", locked, 1), v2Line("ptp_state", "eth0", locked, 2)},
			published: []string{"ptp_state/eth0=LOCKED"}, current: map[refrecv.V2Key]string{ptp("eth0"): "LOCKED"},
			outcome: refrecv.V2Ignored,
		},
		"interfaces are keys of their own": {
			lines: []string{v2Line("ptp_state", "eth0", locked, 1), v2Line("ptp_state", "eth1", locked, 2),
				v2Line("ptp_state", "eth0", holdover, 3)},
			published: []string{"ptp_state/eth0=LOCKED", "ptp_state/eth1=LOCKED", "ptp_state/eth0=HOLDOVER"},
			current:   map[refrecv.V2Key]string{ptp("eth0"): "HOLDOVER", ptp("eth1"): "LOCKED"}, outcome: refrecv.V2Published,
		},
		"node-wide types ignore the interface": {
			lines:     []string{v2Line("os_clock_state", "eth0", locked, 1), v2Line("os_clock_state", "eth1", locked, 2)},
			published: []string{"os_clock_state=LOCKED"},
			current:   map[refrecv.V2Key]string{{Type: "os_clock_state"}: "LOCKED"}, outcome: refrecv.V2Ignored,
		},
		"no interface replaces the whole type": {
			lines:     []string{v2Line("ptp_state", "eth0", locked, 1), v2Line("ptp_state", "", locked, 2)},
			published: []string{"ptp_state/eth0=LOCKED", "ptp_state=LOCKED"},
			current:   map[refrecv.V2Key]string{ptp(""): "LOCKED"}, outcome: refrecv.V2Published,
		},
		"the offset is not a value": {
			lines: []string{v2Line("ptp_state", "eth0", `{"state":"LOCKED","offset":3}`, 1),
				v2Line("ptp_state", "eth0", `{"state":"LOCKED","offset":9}`, 2)},
			published: []string{"ptp_state/eth0=LOCKED"}, current: map[refrecv.V2Key]string{ptp("eth0"): "LOCKED"},
			outcome: refrecv.V2Ignored,
		},
		"clock class": {
			lines:     []string{v2Line("clock_class", "eth0", `{"clock_class":6}`, 1), v2Line("clock_class", "eth0", `{"clock_class":7}`, 2)},
			published: []string{"clock_class/eth0=6", "clock_class/eth0=7"},
			current:   map[refrecv.V2Key]string{{Type: "clock_class", Iface: "eth0"}: "7"}, outcome: refrecv.V2Published,
		},
		"cache_clear empties it and the next value publishes again": {
			lines: []string{v2Line("ptp_state", "eth0", locked, 1), `{"version":1,"type":"cache_clear"}`,
				v2Line("ptp_state", "eth0", locked, 3)},
			published: []string{"ptp_state/eth0=LOCKED", "ptp_state/eth0=LOCKED"},
			current:   map[refrecv.V2Key]string{ptp("eth0"): "LOCKED"}, outcome: refrecv.V2Published,
		},
		"clear": {
			lines:     []string{v2Line("ptp_state", "eth0", locked, 1), `{"version":1,"type":"cache_clear"}`},
			published: []string{"ptp_state/eth0=LOCKED"}, current: map[refrecv.V2Key]string{}, outcome: refrecv.V2Cleared,
		},
		"not JSON":          {lines: []string{"ptp4l[1.2]: master offset 3"}, current: map[refrecv.V2Key]string{}, outcome: refrecv.V2Unparsable},
		"another version":   {lines: []string{`{"version":2,"type":"ptp_state","iface":"e","values":{"state":"LOCKED"}}`}, current: map[refrecv.V2Key]string{}, outcome: refrecv.V2Unparsable},
		"unreadable values": {lines: []string{v2Line("clock_class", "e", `{"clock_class":"six"}`, 1)}, current: map[refrecv.V2Key]string{}, outcome: refrecv.V2Unparsable},
		"unknown type":      {lines: []string{v2Line("offset", "e", `{"x":1}`, 1)}, current: map[refrecv.V2Key]string{}, outcome: refrecv.V2Ignored},
		"no values":         {lines: []string{`{"version":1,"type":"ptp_state","iface":"e"}`}, current: map[refrecv.V2Key]string{}, outcome: refrecv.V2Ignored},
		"status_request":    {lines: []string{`{"version":1,"type":"status_request"}`}, current: map[refrecv.V2Key]string{}, outcome: refrecv.V2Ignored},
		"empty line":        {lines: []string{""}, current: map[refrecv.V2Key]string{}, outcome: refrecv.V2Ignored},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := refrecv.NewV2Cache()
			var published []string
			var out refrecv.V2Outcome
			for _, l := range tc.lines {
				var p refrecv.V2Publish
				out, p = c.Handle([]byte(l))
				if out == refrecv.V2Published {
					published = append(published, p.Key.String()+"="+p.Values)
					require.False(t, p.Timestamp.IsZero(), "stamped with the message's timestamp")
				}
			}
			assert.Equal(t, tc.published, published)
			assert.Equal(t, tc.current, c.Current())
			assert.Equal(t, tc.outcome, out)
		})
	}
}

func TestV2CacheStampsTheMessageTime(t *testing.T) {
	c := refrecv.NewV2Cache()
	out, p := c.Handle([]byte(v2Line("gnss_state", "ens1f0", `{"state":"SYNCHRONIZED"}`, 7)))
	require.Equal(t, refrecv.V2Published, out)
	assert.Equal(t, time.Date(2026, 5, 12, 21, 0, 7, 0, time.UTC), p.Timestamp)
	assert.JSONEq(t, `{"state":"SYNCHRONIZED"}`, string(p.Raw))
	assert.True(t, p.At.IsZero(), "a bare cache publishes at no time")
}
