package powercut

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// TestSpoolSurvivesCutAfterCreate: a spool created in a new directory, one
// event appended (fsync on), then the power cut. The file's fsync does not
// make its name durable, nor the new directories': before Open synced the
// directories, the spool came back empty (spool.db and marks, or the whole
// directory, gone).
func TestSpoolSurvivesCutAfterCreate(t *testing.T) {
	f := mountT(t)
	dir := filepath.Join(f.Dir(), "var", "spool")
	out := runChild(t, "spool-append", dir)
	require.Contains(t, out, "appended 1")
	require.NoError(t, f.PowerOff(Drop, rand.New(rand.NewPCG(1, 1))))
	require.NoError(t, f.PowerOn())
	out = runChild(t, "spool-dump", dir)
	require.Contains(t, out, "entry 1 echoed before the cut", "the committed event after the cut")
}

// spoolChild runs the child side of the spool tests: "spool-append" opens
// the spool and appends one event, then exits without Close (the process
// ends; nothing more is synced); "spool-dump" prints every entry.
func spoolChild(scenario, dir string) error {
	w, err := wal.Open(dir, nil)
	if err != nil {
		return err
	}
	switch scenario {
	case "spool-append":
		last, err := w.Append(context.Background(), []byte("echoed before the cut"))
		if err != nil {
			return err
		}
		fmt.Printf("appended %d\n", last)
		return nil
	case "spool-dump":
		defer w.Close()
		es, err := w.Read(0, 0, 0)
		if err != nil {
			return err
		}
		for _, e := range es {
			fmt.Printf("entry %d %s\n", e.Seq, e.Data)
		}
		return nil
	}
	return fmt.Errorf("unknown scenario %q", scenario)
}
