package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// TestInspectSaysWhatRunWillDo: for a spool that is damaged and for one
// whose spool.db is not a file, inspect says what the next run will do, and
// wal.Open (what run calls) does it: salvages the first, leaves the second
// alone and fails. (A read that fails, which is not damage either, is
// injected in package wal: TestIntegrityTransientReadError.)
func TestInspectSaysWhatRunWillDo(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		spoil      func(t *testing.T, dir string)
		says, not  string
		salvages   bool
		openFailed bool
	}{
		"a meta value fails its checksum": {
			spoil:    breakMetaChecksum,
			says:     "is damaged: ",
			not:      "could not be read",
			salvages: true,
		},
		"a directory where the file should be": {
			// Not damage, and never opened: refused as it is.
			spoil: func(t *testing.T, dir string) {
				require.NoError(t, os.Remove(filepath.Join(dir, "spool.db")))
				require.NoError(t, os.Mkdir(filepath.Join(dir, "spool.db"), 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "spool.db", "x"), []byte("x"), 0o600))
			},
			says:       "spool.db is a directory",
			not:        "is damaged",
			openFailed: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w, err := wal.Open(dir, &wal.Options{NoSync: true})
			require.NoError(t, err)
			for range 5 {
				_, err := w.Append(context.Background(), []byte("event"))
				require.NoError(t, err)
			}
			require.NoError(t, w.Close())
			tc.spoil(t, dir)

			out, err := exec.Command(binary, "inspect", "--spool", dir).CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			require.Equal(t, exitFatal, ee.ExitCode(), "%s", out)
			require.Contains(t, string(out), tc.says)
			require.NotContains(t, string(out), tc.not)
			if tc.salvages {
				require.Contains(t, string(out), "salvages what is readable")
			} else {
				require.Contains(t, string(out), "salvages nothing")
				require.NotContains(t, string(out), "salvages what")
			}

			w, err = wal.Open(dir, &wal.Options{NoSync: true})
			copies, _ := filepath.Glob(filepath.Join(dir, "spool.db.corrupt-*"))
			if tc.openFailed {
				require.Error(t, err)
				require.NotErrorIs(t, err, wal.ErrCorrupt)
				require.ErrorIs(t, err, wal.ErrUnsafeFile)
				require.Empty(t, copies, "salvaged")
				return
			}
			require.NoError(t, err)
			defer w.Close()
			require.Equal(t, tc.salvages, w.Salvaged() != nil, "what inspect said")
			require.Len(t, copies, 1)
		})
	}
}

// breakMetaChecksum flips a bit of the checksum of every copy of the meta
// value next_sequence (payload of 8 bytes, then its crc32c) in spool.db.
func breakMetaChecksum(t *testing.T, dir string) {
	path := filepath.Join(dir, "spool.db")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	key := []byte("next_sequence")
	n := 0
	for o := 0; ; {
		i := bytes.Index(b[o:], key)
		if i < 0 {
			break
		}
		o += i + len(key)
		b[o+8+3] ^= 1 // the last byte of the checksum
		n++
	}
	require.Positive(t, n, "no next_sequence in the file")
	require.NoError(t, os.WriteFile(path, b, 0o600))
}
