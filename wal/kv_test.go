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

// TestStoreLater: a value StoreLater keeps is stored by the next commit,
// whichever it is (an Append's, an acknowledgement's deletion, a SetValues,
// Close), never by a commit of its own; the newest call for a key wins.
func TestStoreLater(t *testing.T) {
	t.Parallel()
	value := func(w *wal.WAL, k string) string {
		v, err := w.Value(k)
		require.NoError(t, err)
		return string(v)
	}
	dir := t.TempDir()
	w, err := wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	require.Error(t, w.StoreLater("next_sequence", []byte("x")))
	require.NoError(t, w.StoreLater("w", []byte("1")))
	require.NoError(t, w.StoreLater("w", []byte("2")))
	require.Empty(t, value(w, "w"), "no commit of its own")
	require.True(t, w.AcksPending(), "a commit awaited")
	_, err = w.Append(t.Context(), []byte("a"), []byte("b"))
	require.NoError(t, err)
	require.Equal(t, "2", value(w, "w"), "an Append's commit")
	require.False(t, w.AcksPending())

	require.NoError(t, w.StoreLater("w", []byte("3")))
	require.NoError(t, w.Ack(1))
	require.NoError(t, w.FlushAcks(0))
	require.Equal(t, "3", value(w, "w"), "the deletion's commit")

	require.NoError(t, w.StoreLater("w", []byte("4")))
	require.NoError(t, w.FlushAcks(0))
	require.Equal(t, "4", value(w, "w"), "alone, when nothing else commits")

	require.NoError(t, w.StoreLater("w", []byte("5")))
	require.NoError(t, w.SetValues(map[string][]byte{"other": []byte("x")}))
	require.Equal(t, "5", value(w, "w"), "a SetValues")

	require.NoError(t, w.StoreLater("w", []byte("6")))
	require.NoError(t, w.Ack(2))
	require.NoError(t, w.Close())
	w, err = wal.Open(dir, &wal.Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	require.Equal(t, "6", value(w, "w"), "Close")
	require.Zero(t, w.Len())
}
