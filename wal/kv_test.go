package wal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/wal"
)

// TestValues: what a user keeps beside the events survives a restart and a
// compaction; a nil value removes its key; the spool's own keys, and keys
// of an event key's length, are refused.
func TestValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	v, err := w.Value("note")
	require.NoError(t, err)
	require.Nil(t, v, "none yet")
	require.NoError(t, w.SetValues(map[string][]byte{"note": []byte("kept"), "gone": []byte("x"), "empty": {}}))
	require.NoError(t, w.SetValues(map[string][]byte{"gone": nil}))
	for _, k := range []string{"", "8 bytes!", "next_sequence", "format_version", "boot_id"} {
		require.Error(t, w.SetValues(map[string][]byte{k: []byte("x")}), "key %q", k)
	}
	_, err = w.Append(t.Context(), []byte("a"), []byte("b"))
	require.NoError(t, err)
	require.NoError(t, w.Ack(1))
	require.NoError(t, w.Compact())
	require.NoError(t, w.Close())
	require.ErrorIs(t, w.SetValues(map[string][]byte{"note": nil}), wal.ErrClosed)
	_, err = w.Value("note")
	require.ErrorIs(t, err, wal.ErrClosed)

	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	require.Nil(t, w.Salvaged())
	for k, want := range map[string][]byte{"note": []byte("kept"), "gone": nil, "empty": {}} {
		v, err := w.Value(k)
		require.NoError(t, err)
		require.Equal(t, want, v, k)
	}
	require.EqualValues(t, 1, w.Len())
}
