package wal

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/internal/testkit/testmode"
	"pgregory.net/rapid"
)

// fifoModel is the in-memory model of the spool: a bounded FIFO whose
// events are stored as values (one commit's events packed into frames of at
// most frameRoom bytes, a lone event as a record of its own) that cost
// entryCost of their length against the spool's budget (initialBudget,
// unless the spool had to lower it). A value costs until its last event
// leaves; dropping the oldest drops whole values.
type fifoModel struct {
	policy  Policy
	budget  int64
	entries []Entry
	values  []modelValue // those holding entries, oldest first
	cost    int64
	nextSeq uint64
	oldest  Counter
	newest  Counter
	handed  uint64 // the newest sequence number read: drop-oldest keeps what it handed out
}

type modelValue struct {
	first, last uint64
	cost        int64
}

func newFifoModel(policy Policy, maxBytes int64) *fifoModel {
	return &fifoModel{policy: policy, budget: initialBudget(maxBytes), nextSeq: 1}
}

// modelCost is what Append prices a request at before it is stored.
func modelCost(events [][]byte) int64 {
	var c int64
	for _, e := range events {
		c += entryCost(len(e))
	}
	return c
}

// modelFrames packs events numbered from first into values, as a commit
// does: greedily, a frame closing when the next event would take it past
// frameRoom.
func modelFrames(first uint64, events [][]byte) []modelValue {
	var out []modelValue
	var group [][]byte
	size := 0
	for _, e := range events {
		if len(group) > 0 && frameGrow(size, len(group), len(e)) > frameRoom {
			out = append(out, packEntries(first, group))
			first += uint64(len(group))
			group, size = nil, 0
		}
		size = frameGrow(size, len(group), len(e))
		group = append(group, e)
	}
	if len(group) > 0 {
		out = append(out, packEntries(first, group))
	}
	return out
}

// append returns the sequence number of the last event stored, or the error
// Append must return.
func (m *fifoModel) append(events [][]byte) (uint64, error) {
	c := modelCost(events)
	if c > m.budget {
		return 0, ErrTooLarge
	}
	if m.cost+c > m.budget {
		switch m.policy {
		case DropNewest:
			m.newest.Events += uint64(len(events))
			for _, e := range events {
				m.newest.Bytes += uint64(len(e))
			}
			return 0, ErrFull
		case Block:
			return 0, ErrFull // the context is already cancelled
		}
		// The values from the first that holds nothing handed out.
		i := 0
		if len(m.entries) > 0 && m.handed >= m.entries[0].Seq {
			for i < len(m.values) && m.values[i].first <= m.handed {
				i++
			}
		}
		for need := m.cost + c - m.budget; need > 0 && i < len(m.values); {
			v := m.values[i]
			m.values = append(m.values[:i:i], m.values[i+1:]...)
			m.cost -= v.cost
			need -= v.cost
			kept := m.entries[:0:0]
			for _, e := range m.entries {
				if e.Seq < v.first || e.Seq > v.last {
					kept = append(kept, e)
					continue
				}
				m.oldest.Events++
				m.oldest.Bytes += uint64(len(e.Data))
			}
			m.entries = kept
		}
	}
	for _, v := range modelFrames(m.nextSeq, events) {
		m.values = append(m.values, v)
		m.cost += v.cost
	}
	for _, e := range events {
		m.entries = append(m.entries, Entry{Seq: m.nextSeq, Data: e})
		m.nextSeq++
	}
	return m.nextSeq - 1, nil
}

func (m *fifoModel) read(from uint64, maxEvents, maxBytes int) []Entry {
	var out []Entry
	size := 0
	for _, e := range m.entries {
		if e.Seq < from {
			continue
		}
		if maxEvents > 0 && len(out) >= maxEvents {
			break
		}
		if maxBytes > 0 && len(out) > 0 && size+len(e.Data) > maxBytes {
			break
		}
		size += len(e.Data)
		out = append(out, e)
	}
	if len(out) > 0 {
		m.handed = max(m.handed, out[len(out)-1].Seq)
	}
	return out
}

func (m *fifoModel) ack(upTo uint64) {
	for len(m.entries) > 0 && m.entries[0].Seq <= upTo {
		m.entries = m.entries[1:]
	}
	for len(m.values) > 0 && m.values[0].last <= upTo {
		m.cost -= m.values[0].cost
		m.values = m.values[1:]
	}
}

// compact is what a compaction changes: a frame of which only some events
// are left is stored anew, holding those.
func (m *fifoModel) compact() {
	if len(m.values) == 0 || m.values[0].first == m.entries[0].Seq {
		return
	}
	v := m.values[0]
	var rest [][]byte
	for _, e := range m.entries {
		if e.Seq > v.last {
			break
		}
		rest = append(rest, e.Data)
	}
	packed := packEntries(m.entries[0].Seq, rest)
	m.cost += packed.cost - v.cost
	m.values[0] = packed
}

// packEntries is the one value compaction and salvage store for consecutive events
// of one stamp that fit in a frame.
func packEntries(first uint64, events [][]byte) modelValue {
	size, n := 0, 0
	for _, e := range events {
		size = frameGrow(size, n, len(e))
		n++
	}
	c := entryCost(size - recordHeader)
	if n == 1 {
		c = entryCost(len(events[0]))
	}
	return modelValue{first: first, last: first + uint64(n) - 1, cost: c}
}

func (m *fifoModel) payload() uint64 {
	var n uint64
	for _, e := range m.entries {
		n += uint64(len(e.Data))
	}
	return n
}

// modelHarness runs one rapid test case: a spool and its model.
type modelHarness struct {
	t         *testing.T
	dir       string
	opts      *Options
	w         *WAL
	m         *fifoModel
	cancelled context.Context // Block must not wait
	label     int
	full      bool   // the spool was full at least once
	compacted uint64 // the spool's compactions the model has followed
}

// followCompactions tells the model of the compactions the spool made
// (Compact, or on its own after an Ack or a commit) since the last look.
func (h *modelHarness) followCompactions() {
	if n := h.w.Stats().Compactions; n != h.compacted {
		h.compacted = n
		h.m.compact()
	}
}

func (h *modelHarness) genEvents(rt *rapid.T) [][]byte {
	n := rapid.IntRange(1, 12).Draw(rt, "events")
	size := rapid.OneOf(rapid.IntRange(0, 200), rapid.IntRange(0, 16<<10), rapid.IntRange(32<<10, 64<<10))
	events := make([][]byte, n)
	for i := range events {
		h.label++
		events[i] = bytes.Repeat([]byte{byte(h.label)}, size.Draw(rt, "size"))
		copy(events[i], fmt.Sprint(h.label))
	}
	return events
}

func (h *modelHarness) appendOp(rt *rapid.T) {
	h.appendEvents(rt, h.genEvents(rt))
}

// burstOp appends batch after batch: enough, most of the time, to fill the
// spool and go on appending to a full one.
func (h *modelHarness) burstOp(rt *rapid.T) {
	n := rapid.IntRange(1, 20).Draw(rt, "batches")
	for i := 0; i < n; i++ {
		h.appendEvents(rt, h.genEvents(rt))
	}
}

func (h *modelHarness) appendEvents(rt *rapid.T, events [][]byte) {
	// The model follows the spool's budget: it starts at initialBudget and
	// shrinks only when the file outgrew the cap (see check).
	h.m.budget = h.w.budget.Load()
	want, wantErr := h.m.append(events)
	if errors.Is(wantErr, ErrFull) || h.m.oldest.Events > 0 {
		h.full = true
	}
	ctx := context.Background()
	if h.opts.OnFull == Block {
		ctx = h.cancelled
	}
	got, err := h.w.Append(ctx, events...)
	h.followCompactions()
	if wantErr != nil {
		require.ErrorIs(rt, err, wantErr)
		if h.opts.OnFull == Block && errors.Is(wantErr, ErrFull) {
			require.ErrorIs(rt, err, context.Canceled)
		}
		return
	}
	require.NoError(rt, err)
	require.Equal(rt, want, got)
}

func (h *modelHarness) readOp(rt *rapid.T) {
	from := rapid.Uint64Range(0, h.m.nextSeq+2).Draw(rt, "from")
	maxEvents := rapid.IntRange(0, 20).Draw(rt, "maxEvents")
	maxBytes := rapid.IntRange(0, 100<<10).Draw(rt, "maxBytes")
	got, err := h.w.Read(from, maxEvents, maxBytes)
	require.NoError(rt, err)
	want := h.m.read(from, maxEvents, maxBytes)
	requireSameEntries(rt, want, got)
}

func (h *modelHarness) ackOp(rt *rapid.T) {
	upTo := rapid.Uint64Range(0, h.m.nextSeq+3).Draw(rt, "upTo")
	require.NoError(rt, h.w.Ack(upTo))
	h.m.ack(upTo)
	h.followCompactions()
}

func (h *modelHarness) reopenOp(rt *rapid.T) {
	require.NoError(rt, h.w.Close())
	w, err := Open(h.dir, h.opts)
	require.NoError(rt, err)
	require.Nil(rt, w.Salvaged())
	h.w, h.compacted = w, 0
	h.m.handed = 0 // a new process has handed nothing out
}

func (h *modelHarness) compactOp(rt *rapid.T) {
	require.NoError(rt, h.w.Compact())
	h.followCompactions()
}

// check compares everything observable with the model.
func (h *modelHarness) check(rt *rapid.T) {
	s := h.w.Stats()
	require.Equal(rt, uint64(len(h.m.entries)), s.PendingEvents)
	require.Equal(rt, uint64(len(h.m.entries)), h.w.Len())
	require.Equal(rt, h.m.payload(), s.PendingBytes)
	require.Equal(rt, h.m.cost, h.w.cost.Load(), "the pending values' cost")
	require.Equal(rt, h.m.nextSeq-1, s.LastSeq)
	require.Equal(rt, h.m.nextSeq-1, h.w.LastSeq())
	var first uint64
	if len(h.m.entries) > 0 {
		first = h.m.entries[0].Seq
	}
	require.Equal(rt, first, s.FirstSeq)
	require.Equal(rt, first, h.w.FirstSeq())
	require.Equal(rt, h.m.oldest, s.DroppedOldest)
	require.Equal(rt, h.m.newest, s.DroppedNewest)
	require.LessOrEqual(rt, s.FileBytes, s.MaxBytes+1<<20)
	// The spool may lower its budget to keep the file under the cap, never
	// below half of it.
	budget := h.w.budget.Load()
	require.LessOrEqual(rt, budget, initialBudget(h.opts.MaxBytes))
	require.GreaterOrEqual(rt, budget, h.opts.MaxBytes/2)
	handed := h.w.out.through.Load()
	got, err := h.w.Read(0, 0, 0)
	h.w.out.through.Store(handed) // a look, not a reader's: nothing more handed out
	require.NoError(rt, err)
	requireSameEntries(rt, h.m.entries, got)
}

func requireSameEntries(t require.TestingT, want, got []Entry) {
	require.Equal(t, len(want), len(got), "entry count")
	for i := range want {
		require.Equal(t, want[i].Seq, got[i].Seq, "entry %d", i)
		require.True(t, bytes.Equal(want[i].Data, got[i].Data), "contents of %d", want[i].Seq)
	}
}

// modelChecks is how many random sequences TestModel tries per policy unless
// -rapid.checks says otherwise: rapid's default of 100 opens, compacts and
// reopens real files for half a minute under -race, so make test tries 10
// (about 6 of them fill the spool) and make torture 100.
var modelChecks = testmode.Pick("10", "100")

// rapidChecksGiven tells whether -rapid.checks was on the command line; it is
// asked once, before TestMain sets the flag itself.
var rapidChecksGiven = sync.OnceValue(func() bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" })
	return given
})

// TestModel runs random Append/Read/Ack/Close+Open/Compact sequences against
// the model, under each policy.
func TestModel(t *testing.T) {
	t.Parallel() // rapid.checks is set in TestMain
	for _, policy := range []Policy{DropOldest, DropNewest, Block} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			var runs, full int
			rapid.Check(t, func(rt *rapid.T) {
				opts := &Options{NoSync: true, MaxBytes: 1 << 20, OnFull: policy}
				cancelled, cancel := context.WithCancel(context.Background())
				cancel()
				h := &modelHarness{t: t, dir: t.TempDir(), opts: opts, m: newFifoModel(policy, opts.MaxBytes), cancelled: cancelled}
				w, err := Open(h.dir, opts)
				require.NoError(rt, err)
				h.w = w
				defer func() { _ = h.w.Close() }()
				runs++
				defer func() {
					if h.full {
						full++
					}
				}()
				rt.Repeat(map[string]func(*rapid.T){
					"append":  h.appendOp,
					"burst":   h.burstOp,
					"read":    h.readOp,
					"ack":     h.ackOp,
					"reopen":  h.reopenOp,
					"compact": h.compactOp,
					"":        h.check,
				})
			})
			t.Logf("%d of %d sequences filled the spool", full, runs)
			require.Positive(t, full, "no sequence filled the spool: the test misses the full-spool paths")
		})
	}
}
