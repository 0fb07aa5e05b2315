package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/evspool/evspool/wal"
)

// TestSpoolAloneAcknowledgesEverything runs the 64-goroutine row's spool
// side small: it must count its commits and their time, and leave nothing
// pending (its reader acknowledged every event, durably enough for a
// reopened spool to see it).
func TestSpoolAloneAcknowledgesEverything(t *testing.T) {
	dir := t.TempDir()
	const n = 64 * 50
	sr, err := spoolAlone(dir, n, 64)
	if err != nil {
		t.Fatal(err)
	}
	if sr.took <= 0 || sr.commits == 0 || sr.commits > n || sr.txTime <= 0 || sr.written <= 0 || sr.written > sr.txTime {
		t.Fatalf("figures: %+v", sr)
	}
	w, err := wal.Open(filepath.Join(dir, "spool"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if st := w.Stats(); st.PendingEvents != 0 || st.LastSeq != n {
		t.Fatalf("after the round: %d pending, last seq %d; want 0 and %d", st.PendingEvents, st.LastSeq, n)
	}
}

// TestCeilingTarget: each row is judged against its ratio, which its name
// states (0.85 for the 64-goroutine row).
func TestCeilingTarget(t *testing.T) {
	var row64 ceilingCase
	for _, cc := range ceilingCases(true) {
		if strings.HasPrefix(cc.name, "library, 64 goroutines") {
			row64 = cc
		}
	}
	if row64.target != 0.85 || row64.spool == nil {
		t.Fatalf("64-goroutine row: target %v, spool side %v", row64.target, row64.spool != nil)
	}
	for _, tc := range []struct {
		ratio float64
		met   bool
	}{{0.84, false}, {0.86, true}} {
		c := &Ceiling{Name: row64.name, Target: row64.target,
			EvspoolPerSec: []float64{tc.ratio}, RawPerSec: []float64{1}, RoundRatios: []float64{tc.ratio}, MedianRatio: tc.ratio}
		got := ceilingTargets(&Results{Ceilings: []*Ceiling{c}})[0]
		if !strings.Contains(got.Name, "≥ 0.85×") {
			t.Errorf("target named %q", got.Name)
		}
		if got.Met == nil || *got.Met != tc.met {
			t.Errorf("ratio %.2f: met %v, want %v", tc.ratio, got.Met, tc.met)
		}
	}
}
