package main

import (
	"bufio"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// v2Flags are the state flags for cloud-event-proxy v2.
var v2Flags = []string{"--state-key", "type,profile,iface", "--state-request", "status_request",
	"--state-clear", "cache_clear", "--release-idle", "500ms"}

// v2Messages returns the simulated node's v2 messages.
func v2Messages(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../../bench/testdata/ptp-v2-messages.ndjson")
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	require.NoError(t, sc.Err())
	return out
}

// v2State is the current state a v2 receiver holds after lines.
func v2State(lines []string) map[refrecv.V2Key]string {
	c := refrecv.NewV2Cache()
	for _, l := range lines {
		c.Handle([]byte(l))
	}
	return c.Current()
}

// TestRunStateV2: against a receiver like cloud-event-proxy v2 (one
// connection at a time, a request on accept, a cache that starts empty),
// evspool run with the v2 state flags leaves it holding the whole current
// state: after the stream, after a restart with nothing new sent, and
// after a restart that missed changes; no key is ever published older
// than one already published.
func TestRunStateV2(t *testing.T) {
	t.Parallel()
	msgs := v2Messages(t)
	sock, spool := paths(t)
	v2, err := refrecv.StartV2(sock, nil)
	require.NoError(t, err)
	t.Cleanup(v2.Kill)
	p := start(t, append([]string{"run", "--socket", sock, "--spool", spool, "--metrics-addr", "127.0.0.1:0"}, v2Flags...)...)
	addr := waitMetricsAddr(t, p)
	// Kill the receiver only once everything is acknowledged: else the
	// replay window resends its last read, which carries part of the state.
	drained := func() {
		require.Eventually(t, func() bool { return value(t, scrape(t, addr), "evspool_spool_pending_events") == 0 },
			10*time.Second, 5*time.Millisecond)
	}
	first, rest := msgs[:800], msgs[800:]
	_, err = io.WriteString(p.stdin, strings.Join(first, "\n")+"\n")
	require.NoError(t, err)
	want := v2State(first)
	current := func() bool { return maps.Equal(v2.Current(), want) }
	require.Eventually(t, current, 20*time.Second, 5*time.Millisecond, "the stream's state")

	drained()
	v2.Kill()
	require.NoError(t, v2.Restart())
	require.Eventually(t, current, 10*time.Second, 5*time.Millisecond, "the state after a restart, nothing new sent")

	drained()
	v2.Kill()
	_, err = io.WriteString(p.stdin, strings.Join(rest, "\n")+"\n")
	require.NoError(t, err)
	require.NoError(t, v2.Restart())
	want = v2State(msgs)
	require.Eventually(t, current, 20*time.Second, 5*time.Millisecond, "the state after a restart that missed changes")

	require.NoError(t, p.stdin.Close())
	require.Equal(t, exitOK, p.wait(t, 20*time.Second), p.logs())
	newest := map[refrecv.V2Key]time.Time{}
	for _, pub := range v2.Published() {
		require.False(t, pub.Timestamp.Before(newest[pub.Key]), "%v published %v after %v", pub.Key, pub.Timestamp, newest[pub.Key])
		newest[pub.Key] = pub.Timestamp
	}
	require.Contains(t, p.logs(), "state_lines=", "the final line counts the state apart")

	keys := map[string]bool{}
	for _, m := range msgs {
		if k, _ := emitter.JSONStateKey([]string{"type", "profile", "iface"}, "cache_clear")([]byte(m)); k != nil {
			keys[string(k)] = true
		}
	}
	out, err := exec.Command(binary, "inspect", "--spool", spool, "--json").Output()
	require.NoError(t, err)
	var rep struct {
		StateKeys int `json:"state_keys"`
	}
	require.NoError(t, json.Unmarshal(out, &rep))
	require.Equal(t, len(keys), rep.StateKeys, "inspect shows the keys the state keeps")
}

// TestStateFlagsUsage: the state flags need --state-key, and its fields
// must be names.
func TestStateFlagsUsage(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	for _, args := range [][]string{
		{"--state-request", "status_request"},
		{"--state-clear", "cache_clear"},
		{"--state-key", "type,,iface"},
		{"--state-key", "type, iface"},
		{"--state-key", "type", "--state-max-keys", "0"},
	} {
		p := start(t, append([]string{"run", "--socket", sock, "--spool", spool}, args...)...)
		require.Equal(t, exitUsage, p.wait(t, 10*time.Second), "%v: %s", args, p.logs())
		require.Contains(t, p.logs(), "--state-", "%v", args)
	}
}

// exec --receiver-to-stdin hands COMMAND what the receiver writes: here
// the request v2 writes on accept, which COMMAND answers with an event;
// with --state-request the request is evspool's to answer, not COMMAND's.
func TestExecReceiverToStdin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		flags []string
		reply bool
	}{
		{"handed on", nil, true},
		{"answered by evspool", v2Flags, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sock, spool := paths(t)
			v2, err := refrecv.StartV2(sock, nil)
			require.NoError(t, err)
			t.Cleanup(v2.Kill)
			script := `echo '{"version":1,"type":"ptp_state","profile":"p","iface":"e0","values":{"state":"LOCKED"}}'
if read -t 3 l; then echo "reply:$l"; fi`
			args := append([]string{"exec", "--socket", sock, "--spool", spool, "--receiver-to-stdin"}, tc.flags...)
			p := start(t, append(args, "--", "bash", "-c", script)...)
			require.Equal(t, exitOK, p.wait(t, 20*time.Second), p.logs())
			var replies []string
			for _, l := range p.echoed() {
				if strings.HasPrefix(l, "reply:") {
					replies = append(replies, l)
				}
			}
			if tc.reply {
				require.Equal(t, []string{`reply:{"version":1,"type":"status_request"}`}, replies)
			} else {
				require.Empty(t, replies)
			}
		})
	}
}

// A COMMAND that never reads its stdin does not hold exec up: what the
// receiver writes beyond the pipe and the queue is dropped and counted, and
// once COMMAND exits the rest fails fast.
func TestExecReceiverToStdinUnread(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	v2, err := refrecv.StartV2(sock, &refrecv.V2Options{WriteBackEvery: 1})
	require.NoError(t, err)
	t.Cleanup(v2.Kill)
	gen := `{"version":1,"type":"ptp_state","profile":"p","iface":"e%g","values":{"state":"LOCKED"}}`
	p := start(t, "exec", "--socket", sock, "--spool", spool, "--receiver-to-stdin", "--", "seq", "-f", gen, "1", "4000")
	require.Equal(t, exitOK, p.wait(t, 30*time.Second), p.logs())
	require.Len(t, p.echoed(), 4000)
	require.Equal(t, 4000, v2.Lines())
	require.NotContains(t, p.logs(), "did not", "closing waited on a write to COMMAND's stdin")
}
