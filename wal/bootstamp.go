package wal

import (
	"crypto/rand"
	"encoding/binary"
	"hash/fnv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/evspool/evspool/wal/clock"
)

// A boot-clock stamp means something only in its boot, so the meta bucket
// keeps the boot of the newest records (boot_id) and its first sequence
// number (boot_first_seq); records from it on age by the boot clock
// (Entry.ThisBoot), others by the wall clock. Salvage's "largest copy wins"
// can at worst make records fall back to the wall clock, never a wrong age.
// noteBoot records that records appended from now on are in boot key.
func (m *meta) noteBoot(key uint64) {
	if m.bootID != key {
		m.bootID, m.bootFirstSeq = key, m.nextSeq
	}
}

// bootKey names the clock's current boot in 64 bits, never 0 (none). Without
// a boot id (not Linux) it is drawn at random per process.
func bootKey(c clock.Clock) uint64 {
	id := c.BootID()
	if id == "" {
		return processKey()
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return max(h.Sum64(), 1)
}

var processKey = sync.OnceValue(func() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return max(binary.BigEndian.Uint64(b[:]), 1)
})

// stampNow is the stamp of a record appended now.
func (w *WAL) stampNow() stamp {
	return stamp{wall: w.opts.Clock.Now().UnixNano(), boot: int64(w.opts.Clock.Boot())}
}

// thisBoot returns the first sequence number stamped in this boot; 0: none.
// It reads only the two boot values: a Read decodes no other meta.
func (w *WAL) thisBoot(b *bolt.Bucket) uint64 {
	if id, err := metaUint(keyBootID, b.Get(keyBootID)); err != nil || id == 0 || id != bootKey(w.opts.Clock) {
		return 0
	}
	first, _ := metaUint(keyBootFirstSeq, b.Get(keyBootFirstSeq))
	return max(first, 1)
}

// entryAt fills in e's clocks from at; from is what thisBoot returned.
func entryAt(e *Entry, at stamp, from uint64) {
	e.Time = time.Unix(0, at.wall)
	e.Boot = time.Duration(at.boot)
	e.ThisBoot = from != 0 && e.Seq >= from && at.boot != 0
}

// Age is how long ago the entry was appended, given the clock's readings
// now: on the boot clock if it was appended in this boot (wall-clock steps
// do not age it), else on the wall clock.
func (e Entry) Age(now time.Time, boot time.Duration) time.Duration {
	if e.ThisBoot {
		return boot - e.Boot
	}
	return now.Sub(e.Time)
}
