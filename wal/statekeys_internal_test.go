package wal

import (
	"testing"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// TestStateStaleCopy: a value older than the last clear, as salvage may
// bring back from a stale page, is never given out; nor is one marked set
// aside.
func TestStateStaleCopy(t *testing.T) {
	t.Parallel()
	w, err := Open(t.TempDir(), &Options{NoSync: true})
	require.NoError(t, err)
	defer w.Close()
	_, err = w.AppendState(t.Context(), [][]byte{[]byte("gone"), []byte("clear"), []byte("kept")},
		[]StateOp{{Key: []byte("gone")}, {Clear: true}, {Key: []byte("kept")}})
	require.NoError(t, err)
	require.NoError(t, w.metaTx(true, func(mb *bolt.Bucket) error {
		name := stateName([]byte("gone"))
		return mb.Put(name, encodeState(name, 1, 0, stamp{}, []byte("gone")))
	}))
	es, err := w.State(100)
	require.NoError(t, err)
	require.Len(t, es, 1)
	require.Equal(t, "kept", string(es[0].Data))
	require.NoError(t, w.SetStateAside(3))
	es, err = w.State(100)
	require.NoError(t, err)
	require.Empty(t, es)
}
