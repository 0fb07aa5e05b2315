package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// install copies the binary byte for byte, 0755, replacing what was there,
// and leaves no temporary file behind.
func TestInstall(t *testing.T) {
	src := filepath.Join(t.TempDir(), "evspool")
	require.NoError(t, os.WriteFile(src, []byte("\x7fELF binary"), 0o700))
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evspool"), []byte("old"), 0o644))
	dst, err := install(src, dir)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "evspool"), dst)
	body, err := os.ReadFile(dst)
	require.NoError(t, err)
	require.Equal(t, "\x7fELF binary", string(body))
	fi, err := os.Stat(dst)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")

	_, err = install(src, filepath.Join(dir, "missing"))
	require.ErrorContains(t, err, "mount a writable volume")
	_, err = install(filepath.Join(dir, "nothing"), dir)
	require.Error(t, err)
}
