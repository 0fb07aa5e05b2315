package pathwatch

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatchSocketAppears: a listener binding the path is reported at once,
// other names in the directory are not.
func TestWatchSocketAppears(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.sock")
	w, err := New(path)
	require.NoError(t, err)
	defer w.Close()

	require.NoError(t, os.WriteFile(filepath.Join(dir, "other"), nil, 0o600))
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	appeared, err := w.Wait(short)
	require.NoError(t, err)
	require.False(t, appeared, "another name in the directory")

	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer ln.Close()
	start := time.Now()
	appeared, err = w.Wait(minute(t))
	require.NoError(t, err)
	require.True(t, appeared)
	require.Less(t, time.Since(start), 30*time.Second, "Wait returned on its deadline, not on the event")
}

// TestWatchRenamedIntoPlace: a path moved into place counts too.
func TestWatchRenamedIntoPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "r.sock")
	w, err := New(path)
	require.NoError(t, err)
	defer w.Close()
	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.WriteFile(tmp, nil, 0o600))
	require.NoError(t, os.Rename(tmp, path))
	appeared, err := w.Wait(minute(t))
	require.NoError(t, err)
	require.True(t, appeared)
}

// TestWatchContextEnds: a cancelled context ends the wait.
func TestWatchContextEnds(t *testing.T) {
	t.Parallel()
	w, err := New(filepath.Join(t.TempDir(), "r.sock"))
	require.NoError(t, err)
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		appeared, err := w.Wait(ctx)
		require.NoError(t, err)
		require.False(t, appeared)
	}()
	cancel()
	<-done
}

// TestWatchDirectoryGone: the directory removed ends the watch with ErrGone;
// a missing directory is an error at New.
func TestWatchDirectoryGone(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "d")
	_, err := New(filepath.Join(dir, "r.sock"))
	require.Error(t, err)
	require.NoError(t, os.Mkdir(dir, 0o700))
	w, err := New(filepath.Join(dir, "r.sock"))
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, os.Remove(dir))
	_, err = w.Wait(minute(t))
	require.True(t, errors.Is(err, ErrGone), "got %v", err)
}

// minute is a context that ends after a minute, or with the test.
func minute(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
