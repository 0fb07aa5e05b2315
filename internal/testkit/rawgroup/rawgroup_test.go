package rawgroup

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// Every event appended is stored once, the callers' commits merge (fewer
// commits than events), and in oneValue mode each key holds a whole commit.
func TestGroupStoresEveryEventOnce(t *testing.T) {
	for _, oneValue := range []bool{false, true} {
		t.Run(fmt.Sprint("oneValue=", oneValue), func(t *testing.T) {
			db, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), 0o600, &bolt.Options{NoSync: true})
			require.NoError(t, err)
			defer db.Close()
			const callers, each = 8, 50
			g, err := New(db, []byte("events"), callers, callers*each, oneValue)
			require.NoError(t, err)
			var wg sync.WaitGroup
			for c := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						assert.NoError(t, g.Append(fmt.Appendf(nil, "c%d-%d", c, i)))
					}
				}()
			}
			wg.Wait()
			commits, _ := g.Stats()
			assert.Less(t, commits, uint64(callers*each), "no commit merged two callers")

			seen := map[string]int{}
			require.NoError(t, db.View(func(tx *bolt.Tx) error {
				keys := 0
				err := tx.Bucket([]byte("events")).ForEach(func(k, v []byte) error {
					keys++
					if !oneValue {
						seen[string(v)]++
						return nil
					}
					for len(v) > 0 {
						n, w := binary.Uvarint(v)
						require.Positive(t, w)
						seen[string(v[w:w+int(n)])]++
						v = v[w+int(n):]
					}
					return nil
				})
				if oneValue {
					assert.Equal(t, int(commits), keys, "one key a commit")
				} else {
					assert.Equal(t, callers*each, keys, "one key an event")
				}
				return err
			}))
			assert.Len(t, seen, callers*each)
			for ev, n := range seen {
				assert.Equal(t, 1, n, ev)
			}
		})
	}
}
