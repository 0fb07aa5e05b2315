package wal

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// failingReads is a faultSeam: the first n reads of each kind fail with err.
type failingReads struct {
	mu    sync.Mutex
	left  map[string]int
	calls map[string]int
	err   error
}

func newFailingReads(err error, mapped, pread int) *failingReads {
	return &failingReads{err: err, left: map[string]int{"map": mapped, "pread": pread}, calls: map[string]int{}}
}

func (f *failingReads) fault(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	if f.left[op] > 0 {
		f.left[op]--
		return f.err
	}
	return nil
}

// trSetup writes 100 events into a closed spool and returns its directory.
func trSetup(t *testing.T) string {
	dir := t.TempDir()
	w, err := Open(dir, &Options{NoSync: true})
	require.NoError(t, err)
	for i := range 100 {
		_, err := w.Append(context.Background(), []byte{byte(i)})
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	return dir
}

func trCopies(t *testing.T, dir string) []string {
	m, err := filepath.Glob(filepath.Join(dir, "spool.db.corrupt-*"))
	require.NoError(t, err)
	return m
}

// TestIntegrityTransientReadError: case 5, a read that fails once under
// bbolt's mapping (EIO), or a filesystem gone for a moment (ENOTCONN), is
// retried, logged, and the sound file is not salvaged; one gone for good
// fails Open with an I/O error, still not salvaged.
func TestIntegrityTransientReadError(t *testing.T) {
	cases := []struct {
		name          string
		seam          *failingReads
		wantOpenError bool
	}{
		{"EIO once under the mapping", newFailingReads(syscall.EIO, 1, 0), false},
		{"filesystem gone twice, then back", newFailingReads(syscall.ENOTCONN, 2, 1), false},
		{"filesystem gone for good", newFailingReads(syscall.ENOTCONN, 100, 100), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := trSetup(t)
			var log bytes.Buffer
			w, err := Open(dir, &Options{NoSync: true, faults: tc.seam, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			require.Empty(t, trCopies(t, dir), "a sound file was salvaged")
			require.Contains(t, log.String(), "retrying before deciding it is damaged")
			if tc.wantOpenError {
				require.Error(t, err)
				require.NotErrorIs(t, err, ErrCorrupt)
				require.ErrorIs(t, err, syscall.ENOTCONN)
				require.Contains(t, err.Error(), "not salvaged")
				require.Equal(t, openSchedule.tries-1, strings.Count(log.String(), "retrying before deciding"), "tries")
				return
			}
			require.NoError(t, err)
			defer w.Close()
			require.Nil(t, w.Salvaged())
			require.EqualValues(t, 100, w.Len())
			es, err := w.Read(0, 0, 0)
			require.NoError(t, err)
			require.Len(t, es, 100)
		})
	}
}

// TestRepairAfterFault: Repair given a memory fault reads the file again
// before it salvages anything: sound, it is reopened and nothing is
// salvaged; unreadable, Repair fails and the file is left as it is.
func TestRepairAfterFault(t *testing.T) {
	cause := &CorruptionError{Path: "x", Err: &faultError{"injected"}}
	t.Run("sound", func(t *testing.T) {
		dir := trSetup(t)
		w, err := Open(dir, &Options{NoSync: true})
		require.NoError(t, err)
		defer w.Close()
		r, err := w.Repair(cause)
		require.NoError(t, err)
		require.Nil(t, r, "nothing salvaged")
		require.Empty(t, trCopies(t, dir))
		_, err = w.Append(context.Background(), []byte("after"))
		require.NoError(t, err)
		require.EqualValues(t, 101, w.Len())
	})
	t.Run("unreadable", func(t *testing.T) {
		dir := trSetup(t)
		seam := newFailingReads(syscall.EIO, 0, 0)
		w, err := Open(dir, &Options{NoSync: true, faults: seam})
		require.NoError(t, err)
		defer w.Close()
		seam.left["pread"] = 1
		_, err = w.Repair(cause)
		require.ErrorIs(t, err, syscall.EIO)
		require.Contains(t, err.Error(), "not salvaged")
		require.Empty(t, trCopies(t, dir))
		require.EqualValues(t, 100, w.Len())
		_, err = os.Stat(w.Path())
		require.NoError(t, err)
	})
}

// preadAfterFault is a faultSeam for a bad spot of the disk that only
// bbolt's mapping reaches (checkFile reads the pages it checks well): every
// read through the mapping faults, and so does the pread of the whole file
// that follows each fault.
type preadAfterFault struct {
	mu      sync.Mutex
	faulted bool
}

func (f *preadAfterFault) fault(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if op == "map" {
		f.faulted = true
		return syscall.EIO
	}
	if f.faulted {
		f.faulted = false
		return syscall.EIO
	}
	return nil
}

// TestFaultThenReadErrorNotSalvaged: a mapping that faults at every try,
// where pread fails as well, is an I/O error: Open fails, saying so, and
// salvages nothing. (Its error wrapped the fault's *CorruptionError, so Open
// took it for damage and salvaged the file.)
func TestFaultThenReadErrorNotSalvaged(t *testing.T) {
	dir := trSetup(t)
	_, err := Open(dir, &Options{NoSync: true, faults: &preadAfterFault{}})
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, err, syscall.EIO)
	require.Contains(t, err.Error(), "failed 4 times over 420ms", "the waits between the tries: 20, 80, 320 ms")
	require.Contains(t, err.Error(), "not salvaged")
	require.Empty(t, trCopies(t, dir), "an unreadable file was salvaged")
}
