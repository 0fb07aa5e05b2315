package main

import (
	"math"
	"strings"
	"testing"
)

func TestCLIRatiosSkipIncompleteRounds(t *testing.T) {
	row := func(side string, rate float64, round int, cpuNs, lines, sent, received int64) *CLICostRow {
		return &CLICostRow{Side: side, Rate: rate, Round: round, Sent: sent, Received: received,
			Window: costWindow{Seconds: 10, Events: lines, CPUNs: cpuNs}}
	}
	rows := []*CLICostRow{
		row(cliEvspool, 1000, 0, 2_000_000, 1000, 5000, 5000),
		row(cliSyslog, 1000, 0, 1_000_000, 1000, 5000, 5000),
		row(cliEvspoolNB, 1000, 0, 1_500_000, 1000, 5000, 5000),
		// round 1: syslog-ng's receiver missed a line, so the round is
		// not a ratio, however cheap syslog-ng looked in it.
		row(cliEvspool, 1000, 1, 3_000_000, 1000, 5000, 5000),
		row(cliSyslog, 1000, 1, 100_000, 999, 5000, 4999),
		row(cliEvspool, 100, 0, 500_000, 100, 500, 500),
		row(cliSyslog, 100, 0, 200_000, 100, 500, 500),
	}
	got := map[string]CostRatio{}
	for _, cr := range cliRatios(rows, []float64{100, 1000}) {
		got[cr.Of+"/"+cr.To+"@"+humanRate(cr.Rate)] = cr
	}
	check := func(key string, want ...float64) {
		t.Helper()
		cr, ok := got[key]
		if !ok {
			t.Fatalf("no ratio %s in %v", key, got)
		}
		if len(cr.Rounds) != len(want) {
			t.Fatalf("%s: rounds %v, want %v", key, cr.Rounds, want)
		}
		for i := range want {
			if math.Abs(cr.Rounds[i]-want[i]) > 1e-9 {
				t.Fatalf("%s: rounds %v, want %v", key, cr.Rounds, want)
			}
		}
	}
	check(cliEvspool+"/"+cliSyslog+"@1.0k", 2.0)
	check(cliEvspool+"/"+cliSyslog+"@100", 2.5)
	check(cliEvspoolNB+"/"+cliEvspool+"@1.0k", 0.75)
	if _, ok := got[cliEvspoolNB+"/"+cliSyslog+"@100"]; ok {
		t.Fatalf("a ratio for a side that did not run: %v", got)
	}
}

func TestPoolCLICosts(t *testing.T) {
	cc := func(rounds ...float64) *CLICost {
		return &CLICost{Ratios: []CostRatio{{Of: cliEvspool, To: cliSyslog, Rate: 1000, Rounds: rounds}}}
	}
	runs := []*Results{{CLICost: cc(2.0, 2.2, 2.4)}, {NodeCost: &NodeCost{}}, {CLICost: cc(1.9, 2.1, 2.3)}, {CLICost: cc(2.5)}}
	p := poolCLICosts(runs)
	if len(p) != 1 || p[0].Runs != 3 || len(p[0].Rounds) != 7 || !strings.HasPrefix(p[0].Name, cliCost+" ") {
		t.Fatalf("pooled %+v", p)
	}
	if m := median(p[0].Rounds); math.Abs(m-2.2) > 1e-9 {
		t.Fatalf("median %v, want 2.2", m)
	}
}

// perfScript is `perf script -F period,ip,sym` output: a header holding the period, frames leaf
// first, a blank line.
const perfScript = `   1003009 
	ffffffff813aecd3 finish_task_switch.isra.0
	ffffffff8224a1b3 schedule
	           95263 runtime.usleep.abi0
	           63dd2 runtime.sysmon
	           91a4c runtime.mstart.abi0

   1003009 
	           8a141 go.etcd.io/bbolt.(*Tx).write
	           8a141 github.com/evspool/evspool/wal.(*state).deleteHidden
	           8a141 github.com/evspool/evspool/wal.(*WAL).commitTx
	           8a141 github.com/evspool/evspool/emitter.(*Emitter).Emit
	           8a141 main.pump

   1003009 
	           8a141 go.etcd.io/bbolt.(*Tx).write
	           8a141 github.com/evspool/evspool/wal.(*WAL).commitTx
	           8a141 github.com/evspool/evspool/wal/clock.(*systemClock).Now
	           8a141 github.com/evspool/evspool/emitter.(*Emitter).Emit

   1003009 
	ffffffff8144bd5d anon_pipe_read
	           8a141 syscall.read
	           8a141 os.(*File).Read
	           8a141 main.readLines

   1003009 
	           8a141 internal/runtime/syscall/linux.Syscall6
	           8a141 github.com/evspool/evspool/internal/sockwait.outq
	           8a141 github.com/evspool/evspool/emitter.(*drainer).check
	           8a141 github.com/evspool/evspool/emitter.(*drainer).writeInline

   1003009 
	           8a141 runtime.gcDrain
	           8a141 runtime.gcBgMarkWorker
`

func TestPerfAttribParts(t *testing.T) {
	var got []string
	var periods int64
	eachStack(strings.NewReader(perfScript), func(period int64, frames []string) {
		got = append(got, attribute(frames))
		periods += period
	})
	if periods != 6*1003009 {
		t.Errorf("periods %d, want %d", periods, 6*1003009)
	}
	want := []string{partSysmon, partAcks, partCommit, partStdin, partLooks, partGC}
	if len(got) != len(want) {
		t.Fatalf("%d samples, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d: %q, want %q", i, got[i], want[i])
		}
	}
}
