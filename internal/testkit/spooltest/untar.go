// Package spooltest helps tests that start from a spool an earlier evspool
// wrote, kept as a tar.gz in testdata.
package spooltest

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Untar extracts the files of archive (a .tar.gz) into dir, flat.
func Untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		out, err := os.OpenFile(filepath.Join(dir, filepath.Base(h.Name)), os.O_CREATE|os.O_WRONLY, 0o600)
		require.NoError(t, err)
		_, err = io.Copy(out, tr)
		require.NoError(t, err)
		require.NoError(t, out.Close())
	}
}
