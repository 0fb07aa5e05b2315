package emitter_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/internal/refrecv"
)

// v2Key is the state key of the v2 receiver, with its clear line.
var v2Key = emitter.JSONStateKey([]string{"type", "profile", "iface"}, "cache_clear")

// stEvent is a v2 message: key k (its iface), value n.
func stEvent(k string, n int) string {
	return fmt.Sprintf(`{"version":1,"type":"ptp_state","profile":"ptp4l.0.config","iface":%q,"values":{"n":%d}}`, k, n)
}

// stParse returns a stEvent's key and value; ok false for anything else.
func stParse(line string) (k string, n int, ok bool) {
	var m struct {
		Type   string `json:"type"`
		Iface  string `json:"iface"`
		Values struct {
			N int `json:"n"`
		} `json:"values"`
	}
	if json.Unmarshal([]byte(line), &m) != nil || m.Type != "ptp_state" {
		return "", 0, false
	}
	return m.Iface, m.Values.N, true
}

// stCheck checks what a receiver that starts empty on every connection
// sees: per connection, per key, values never go back; a clear forgets.
// It returns the state the last connection ends with.
func stCheck(t *testing.T, lines []refrecv.Line) map[string]int {
	t.Helper()
	var state map[string]int
	conn := -1
	for _, l := range lines {
		if l.Conn != conn {
			conn, state = l.Conn, map[string]int{}
		}
		if l.Data == `{"version":1,"type":"cache_clear"}` {
			clear(state)
			continue
		}
		k, n, ok := stParse(l.Data)
		require.True(t, ok, "not a state line: %q", l.Data)
		old, seen := state[k]
		require.False(t, seen && n < old, "connection %d: key %s went back from %d to %d", conn, k, old, n)
		state[k] = n
	}
	return state
}

// A receiver restarted after everything was delivered gets the newest
// event of every key, and nothing else; a clear retires the keys before
// it.
func TestStateAfterReceiverRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{StateKey: v2Key})
	want := map[string]int{}
	for n := range 5 {
		for _, k := range []string{"ens1f0", "ens1f1", "ens2f0"} {
			r.emitAll([]string{stEvent(k, n)})
			want[k] = n
		}
	}
	r.flush(5 * time.Second)
	waitLines(t, r.rcv, 15)
	require.NoError(t, r.rcv.Kill())
	require.NoError(t, r.rcv.Restart())
	lines := waitLines(t, r.rcv, 18)
	require.Equal(t, []string{stEvent("ens1f0", 4), stEvent("ens1f1", 4), stEvent("ens2f0", 4)}, lines[15:],
		"the newest of each key, in the order they were emitted")
	// The drainer counts the state once its last chunk is written, which
	// may be after the receiver has read it.
	require.Eventually(t, func() bool { return r.em.Stats().StateLines == 3 }, 5*time.Second, time.Millisecond)
	st := r.em.Stats()
	require.EqualValues(t, 3, st.StateLines)
	require.EqualValues(t, 15, st.Delivered, "the state is not counted delivered")
	require.EqualValues(t, 3, st.Spool.StateKeys)
	require.Equal(t, want, stCheck(t, r.rcv.Received()))

	r.emitAll([]string{`{"version":1,"type":"cache_clear"}`, stEvent("ens9", 1)})
	r.flush(5 * time.Second)
	waitLines(t, r.rcv, 20)
	require.NoError(t, r.rcv.Kill())
	require.NoError(t, r.rcv.Restart())
	lines = waitLines(t, r.rcv, 21)
	require.Equal(t, []string{stEvent("ens9", 1)}, lines[20:], "keys before the clear are retired")
}

// A receiver that was down while some keys changed gets, on its new
// connection, the keys with nothing pending first, then the backlog in
// order: no key goes back, and it ends with the whole state.
func TestStateBeforeBacklog(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{StateKey: v2Key})
	want := map[string]int{}
	emit := func(k string, n int) {
		r.emitAll([]string{stEvent(k, n)})
		want[k] = n
	}
	for _, k := range []string{"a", "b", "c", "d"} {
		emit(k, 1)
	}
	r.flush(5 * time.Second)
	waitLines(t, r.rcv, 4)
	require.NoError(t, r.rcv.Kill())
	emit("b", 2)
	emit("d", 2)
	emit("b", 3)
	require.NoError(t, r.rcv.Restart())
	r.flush(5 * time.Second)
	lines := waitLines(t, r.rcv, 9)
	require.Equal(t, []string{stEvent("a", 1), stEvent("c", 1), stEvent("b", 2), stEvent("d", 2), stEvent("b", 3)}, lines[4:])
	require.Equal(t, want, stCheck(t, r.rcv.Received()))
}

// Per key the receiver never sees an older value after a newer one, and
// ends with the whole state, while it is killed again and again with
// lines in flight and read but not handled.
func TestStateOrderUnderKills(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{HandleTime: 200 * time.Microsecond}, &emitter.Options{StateKey: v2Key})
	keys := []string{"a", "b", "c", "d", "e", "f"}
	want := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 6 && ctx.Err() == nil; i++ {
			time.Sleep(30 * time.Millisecond) // the fault's timing, not a wait for something
			if r.rcv.Kill() == nil {
				_ = r.rcv.Restart()
			}
		}
	}()
	for n := range 1500 {
		k := keys[(n*7)%len(keys)]
		r.emitAll([]string{stEvent(k, n)})
		want[k] = n
	}
	<-done
	cancel()
	r.flush(20 * time.Second)
	// Once more with nothing new: the state alone.
	require.NoError(t, r.rcv.Kill())
	require.NoError(t, r.rcv.Restart())
	require.Eventually(t, func() bool {
		rec := r.rcv.Received()
		return len(rec) > 0 && rec[len(rec)-1].Conn == r.rcv.Accepted() && len(lastConn(rec)) == len(keys)
	}, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, want, stCheck(t, r.rcv.Received()))
}

// lastConn returns the lines of the last connection.
func lastConn(lines []refrecv.Line) []refrecv.Line {
	i := len(lines)
	for i > 0 && lines[i-1].Conn == lines[len(lines)-1].Conn {
		i--
	}
	return lines[i:]
}

// openAt opens an emitter on sock with its spool in dir (NoSync, no echo,
// opts' other fields as given), closed at the test's end.
func openAt(t *testing.T, dir, sock string, opts emitter.Options) *emitter.Emitter {
	t.Helper()
	opts.NoSync, opts.Stdout = true, io.Discard
	em, err := emitter.Open(sock, filepath.Join(dir, "spool"), &opts)
	require.NoError(t, err)
	t.Cleanup(func() { em.Close(context.Background()) })
	return em
}

// oneAtATime is a receiver shaped like cloud-event-proxy v2: one
// connection at a time, the request line written on accept, then lines
// read until EOF; with writeBack, one line written back (blocking) every
// writeBack lines read.
type oneAtATime struct {
	ln        net.Listener
	writeBack int
	mu        sync.Mutex
	lines     []refrecv.Line
	eofs      atomic.Int64 // connections that ended with EOF
	resets    atomic.Int64 // connections that ended with an error
	conns     atomic.Int64
}

func startOneAtATime(t *testing.T, path string, writeBack int) *oneAtATime {
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	o := &oneAtATime{ln: ln, writeBack: writeBack}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			o.serve(c)
		}
	}()
	return o
}

func (o *oneAtATime) serve(c net.Conn) {
	defer c.Close()
	n := int(o.conns.Add(1))
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, `{"version":1,"type":"status_request"}`+"\n"); err != nil {
		return
	}
	c.SetWriteDeadline(time.Time{})
	sc := bufio.NewScanner(c)
	read := 0
	for sc.Scan() {
		o.mu.Lock()
		o.lines = append(o.lines, refrecv.Line{Data: sc.Text(), Conn: n})
		o.mu.Unlock()
		read++
		if o.writeBack > 0 && read%o.writeBack == 0 {
			if _, err := fmt.Fprintf(c, `{"type":"ack","n":%d}`+"\n", read); err != nil {
				return
			}
		}
	}
	if sc.Err() == nil {
		o.eofs.Add(1)
	} else {
		o.resets.Add(1)
	}
}

func (o *oneAtATime) received() []refrecv.Line {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]refrecv.Line(nil), o.lines...)
}

// A receiver that writes back often is read: it never stalls delivery,
// its lines reach OnReceive in order, and its request is answered with
// the state, not handed on.
func TestReceiverWritesBack(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "events.sock")
	rcv := startOneAtATime(t, sock, 10)
	var mu sync.Mutex
	var got []string
	em := openAt(t, dir, sock, emitter.Options{
		StateKey: v2Key, StateRequest: emitter.JSONType("status_request"),
		OnReceive: func(line []byte) { mu.Lock(); got = append(got, string(line)); mu.Unlock() }})
	// 500 lines written back: a Unix socket's send buffer holds about 280
	// such small writes, so a sender that did not read would deadlock.
	// Emitted 100 a commit: what is under test is the reading, not Emit.
	const n = 5000
	for i := 0; i < n; i += 100 {
		batch := make([][]byte, 100)
		for j := range batch {
			batch[j] = []byte(stEvent(fmt.Sprint((i+j)%8), i+j))
		}
		require.NoError(t, em.Emit(context.Background(), batch...))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, em.Flush(ctx), "stats: %+v", em.Stats())
	require.NoError(t, em.Close(ctx))
	require.Eventually(t, func() bool { return rcv.eofs.Load() == 1 }, 5*time.Second, time.Millisecond,
		"the receiver gets EOF at Close, not a reset: nothing was left unread")
	handled := 0
	for _, l := range rcv.received() {
		if _, _, ok := stParse(l.Data); ok {
			handled++
		}
	}
	require.GreaterOrEqual(t, handled, n)
	st := em.Stats()
	require.EqualValues(t, 1, st.StateRequests)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, int(st.ReceivedLines-st.StateRequests))
	require.GreaterOrEqual(t, len(got), n/10-1)
	require.Equal(t, `{"type":"ack","n":10}`, got[0])
	require.Zero(t, st.ReceivedDropped+st.ReceivedLong)
}

// With ReleaseIdle, an idle connection is let go (the receiver reads EOF)
// so that a receiver serving one connection at a time serves the next;
// the next event dials again and starts with the state.
func TestReleaseIdle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "events.sock")
	rcv := startOneAtATime(t, sock, 0)
	em := openAt(t, dir, sock, emitter.Options{
		StateKey: v2Key, StateRequest: emitter.JSONType("status_request"), ReleaseIdle: 100 * time.Millisecond, ReplayLinger: 20 * time.Millisecond})
	require.NoError(t, em.Emit(context.Background(), []byte(stEvent("a", 1))))
	require.Eventually(t, func() bool { return rcv.eofs.Load() == 1 }, 5*time.Second, time.Millisecond)
	other, err := net.Dial("unix", sock)
	require.NoError(t, err, "another client")
	line, err := bufio.NewReader(other).ReadString('\n')
	require.NoError(t, err, "the receiver serves another client")
	require.Contains(t, line, "status_request")
	other.Close()
	require.Eventually(t, func() bool { return rcv.eofs.Load() == 2 }, 5*time.Second, time.Millisecond)

	require.NoError(t, em.Emit(context.Background(), []byte(stEvent("b", 1))))
	require.Eventually(t, func() bool { return len(rcv.received()) == 3 }, 5*time.Second, time.Millisecond)
	rec := rcv.received()
	require.Equal(t, []string{stEvent("a", 1), stEvent("a", 1), stEvent("b", 1)},
		[]string{rec[0].Data, rec[1].Data, rec[2].Data}, "a, then on the new connection the state (a), then b")
	require.Equal(t, 3, rec[2].Conn)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, em.Flush(ctx))
	st := em.Stats()
	require.GreaterOrEqual(t, st.Releases, uint64(1))
	require.Zero(t, st.Reconnects, "a dial after a release is no reconnect")
	require.EqualValues(t, 2, st.Delivered)
	require.Zero(t, rcv.resets.Load())
}

// JSONStateKey: the fields' values make the key, a missing field counts as
// empty, a line that is not a JSON object or has none of the fields has no
// key, and the clear type clears.
func TestJSONStateKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, line string
		key        string
		clear      bool
	}{
		{"all fields", `{"type":"ptp_state","profile":"p0","iface":"ens1f0","values":{}}`, "ptp_state\x00p0\x00ens1f0", false},
		{"no iface", `{"type":"os_clock_state","profile":"phc2sys"}`, "os_clock_state\x00phc2sys\x00", false},
		{"number", `{"type":7,"profile":"p"}`, "7\x00p\x00", false},
		{"none of the fields", `{"version":1}`, "", false},
		{"not JSON", `ptp4l[1.2]: master offset 3`, "", false},
		{"not an object", `["type"]`, "", false},
		{"broken JSON", `{"type":"x"`, "", false},
		{"clear", `{"version":1,"type":"cache_clear"}`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, clear := v2Key([]byte(tc.line))
			require.Equal(t, tc.key, string(key))
			require.Equal(t, tc.clear, clear)
		})
	}
	req := emitter.JSONType("status_request")
	require.True(t, req([]byte(`{"version":1,"type":"status_request"}`)))
	require.False(t, req([]byte(`{"type":"status_requestx"}`)))
	require.False(t, req([]byte(`status_request`)))
}

// A line from the receiver longer than MaxReceiveLine is discarded and
// counted; the lines around it are not lost.
func TestReceiverLongLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "events.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer ln.Close()
	var got []string
	var mu sync.Mutex
	em := openAt(t, dir, sock, emitter.Options{
		MaxReceiveLine: 100, OnReceive: func(l []byte) { mu.Lock(); got = append(got, string(l)); mu.Unlock() }})
	c, err := ln.Accept()
	require.NoError(t, err)
	defer c.Close()
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	_, err = fmt.Fprintf(c, "first\n%s\nlast\n", long)
	require.NoError(t, err)
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"first", "last"}, got)
	require.EqualValues(t, 1, em.Stats().ReceivedLong)
	require.False(t, errors.Is(em.Alive(), emitter.ErrNotAlive))
}

// BenchmarkJSONStateKey prices the v2 key of one message, the cost state
// keys add to an event beside the spool's (node-cost's
// evspool-fsync-keys).
func BenchmarkJSONStateKey(b *testing.B) {
	msg := []byte(`{"version":1,"type":"ptp_state","timestamp":"2026-05-12T21:00:00.074311Z","profile":"ptp4l.0.config","iface":"ens1f0","values":{"state":"FREERUN"}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if k, _ := v2Key(msg); len(k) == 0 {
			b.Fatal("no key")
		}
	}
}

// A receiver that serves one connection at a time and is busy with another
// client has not accepted evspool's: the outage says so, not that it is
// frozen, and once it accepts, delivery goes on.
func TestBusyReceiverNotFrozen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "events.sock")
	rcv := startOneAtATime(t, sock, 0)
	other, err := net.Dial("unix", sock)
	require.NoError(t, err)
	_, err = bufio.NewReader(other).ReadString('\n')
	require.NoError(t, err, "the receiver serves the other client")
	logs := &logSink{}
	em := openAt(t, dir, sock, emitter.Options{
		StateKey: v2Key, StateRequest: emitter.JSONType("status_request"), ReplayLinger: 20 * time.Millisecond,
		WriteTimeout: 100 * time.Millisecond, StallTimeout: 300 * time.Millisecond, Logger: slog.New(logs)})
	require.NoError(t, em.Emit(context.Background(), []byte(stEvent("a", 1))))
	require.Eventually(t, func() bool { return logged(logs, "has not accepted the connection") }, 10*time.Second, 5*time.Millisecond)
	require.False(t, logged(logs, "receiver frozen"))
	other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, em.Flush(ctx))
	require.Equal(t, stEvent("a", 1), rcv.received()[0].Data)
}

// logged reports whether a record's error attribute contains s.
func logged(l *logSink, s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	found := false
	for _, r := range l.records {
		r.Attrs(func(a slog.Attr) bool {
			found = found || a.Key == "error" && strings.Contains(a.Value.String(), s)
			return !found
		})
	}
	return found
}

// StateMaxAge leaves out of the state a key no event renewed for so long,
// on the emitter's clock.
func TestStateMaxAge(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{StateKey: v2Key, StateMaxAge: time.Hour, Clock: clk})
	r.emitAll([]string{stEvent("old", 1)})
	clk.Advance(2 * time.Hour)
	r.emitAll([]string{stEvent("new", 1)})
	r.flush(5 * time.Second)
	waitLines(t, r.rcv, 2)
	require.NoError(t, r.rcv.Kill())
	require.NoError(t, r.rcv.Restart())
	require.Eventually(t, func() bool { return r.em.Stats().StateWrites == 2 }, 5*time.Second, time.Millisecond)
	lines := waitLines(t, r.rcv, 3)
	require.Equal(t, []string{stEvent("new", 1)}, lines[2:], "old is older than StateMaxAge")
	require.EqualValues(t, 1, r.em.Stats().StateLines)
}

// A receiver that restarts while the connection is released gets the
// state at once: evspool dials when its socket path appears again, with
// nothing new to send.
func TestReleasedReceiverRestartGetsState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "events.sock")
	v2, err := refrecv.StartV2(sock, nil)
	require.NoError(t, err)
	t.Cleanup(v2.Kill)
	em := openAt(t, dir, sock, emitter.Options{
		StateKey: v2Key, StateRequest: emitter.JSONType("status_request"),
		ReleaseIdle: 50 * time.Millisecond, ReplayLinger: 20 * time.Millisecond})
	for _, iface := range []string{"ens1f0", "ens1f1"} {
		ev := fmt.Sprintf(`{"version":1,"type":"ptp_state","profile":"ptp4l.0.config","iface":%q,"values":{"state":"LOCKED"}}`, iface)
		require.NoError(t, em.Emit(context.Background(), []byte(ev)))
	}
	require.Eventually(t, func() bool { return len(v2.Current()) == 2 && em.Stats().Releases > 0 }, 10*time.Second, time.Millisecond)
	v2.Kill()
	require.NoError(t, v2.Restart())
	require.Eventually(t, func() bool { return len(v2.Current()) == 2 }, 10*time.Second, time.Millisecond,
		"the restarted receiver holds the state with nothing new sent")
}

// A receiver killed with the newest event of a key read but not shown
// handled gets, on the next connection, the state of the other keys, then
// that event: the older event of its key resent first as the witness of
// poison isolation is in order, and nothing is left waiting.
func TestStateResendAfterKill(t *testing.T) {
	t.Parallel()
	clk := newClock()
	dir := t.TempDir()
	sock := filepath.Join(dir, "events.sock")
	v2, err := refrecv.StartV2(sock, nil)
	require.NoError(t, err)
	t.Cleanup(v2.Kill)
	em := openAt(t, dir, sock, emitter.Options{
		StateKey: v2Key, StateRequest: emitter.JSONType("status_request"), ReplayLinger: 10 * time.Second, Clock: clk})
	msg := func(iface, state string) []byte {
		return fmt.Appendf(nil, `{"version":1,"type":"ptp_state","profile":"ptp4l.1.config","iface":%q,"values":{"state":%q}}`, iface, state)
	}
	require.NoError(t, em.Emit(context.Background(), msg("ens2f1", "LOCKED"), msg("ens2f0", "HOLDOVER")))
	require.Eventually(t, func() bool { return v2.Lines() == 2 }, 5*time.Second, time.Millisecond)
	// Both read ReplayLinger ago: handled. The clock moves until the
	// drainer, which may see the read only after a move, has seen it so.
	require.Eventually(t, func() bool {
		clk.Advance(11 * time.Second)
		return em.Stats().Delivered == 2
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, em.Emit(context.Background(), msg("ens2f0", "LOCKED")))
	require.Eventually(t, func() bool { return v2.Lines() == 3 }, 5*time.Second, time.Millisecond)
	v2.Kill() // LOCKED read, not shown handled: resent
	require.NoError(t, v2.Restart())
	want := map[refrecv.V2Key]string{{Type: "ptp_state", Iface: "ens2f0"}: "LOCKED", {Type: "ptp_state", Iface: "ens2f1"}: "LOCKED"}
	require.Eventually(t, func() bool { return reflect.DeepEqual(v2.Current(), want) }, 5*time.Second, time.Millisecond,
		"got %v", v2.Current())
}

// MaxAge is not StateMaxAge: a delivered event older than MaxAge is still
// its key's newest, and a new connection's state carries it.
func TestStateKeepsWhatMaxAgeWouldExpire(t *testing.T) {
	t.Parallel()
	clk := newClock()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{StateKey: v2Key, MaxAge: time.Hour, Clock: clk})
	r.emitAll([]string{stEvent("old", 1)})
	r.flush(5 * time.Second)
	waitLines(t, r.rcv, 1)
	clk.Advance(2 * time.Hour)
	require.NoError(t, r.rcv.Kill())
	require.NoError(t, r.rcv.Restart())
	lines := waitLines(t, r.rcv, 2)
	require.Equal(t, []string{stEvent("old", 1)}, lines[1:], "the state carries it")
}

// A key the state cannot keep (past MaxStateKeys) is counted and logged at
// once, then rate-limited; MaxStateKeys reaches the spool.
func TestStateRefusedLogged(t *testing.T) {
	t.Parallel()
	r := newRig(t, &refrecv.Options{}, &emitter.Options{StateKey: emitter.JSONStateKey([]string{"k"}, ""), MaxStateKeys: 2})
	sent := []string{`{"k":"a"}`, `{"k":"b"}`, `{"k":"c"}`, `{"k":"d"}`}
	r.emitAll(sent)
	st := r.em.Stats().Spool
	require.EqualValues(t, 2, st.StateKeys, "a and b kept")
	require.EqualValues(t, 2, st.StateRefused, "c and d refused")
	const msg = "keys not kept in the state: it holds its most keys or a quarter of the spool's cap, or a key is longer than 247 bytes"
	require.Equal(t, 1, r.logs.count(slog.LevelWarn, msg), "c's refusal at once, d's within the interval left for the next line")
	refused, _ := r.logs.attr(msg, "refused_keys")
	require.EqualValues(t, 1, refused.Uint64())
	limit, _ := r.logs.attr(msg, "max_state_keys")
	require.EqualValues(t, 2, limit.Int64())
	r.flush(5 * time.Second)
	requireDelivered(t, sent, r.rcv.Lines())
}
