package wal

import (
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

var (
	eventsBucket = []byte("events")
	metaBucket   = []byte("meta")
)

// Meta keys. None is 8 bytes long, so none can be mistaken for an event key
// when a damaged file is scanned page by page. Every Counter here only ever
// grows, so salvage can take the largest value it finds in any copy of a page.
var (
	keyFormat        = []byte("format_version")
	keyNextSeq       = []byte("next_sequence")
	keyRemovedSeq    = []byte("removed_through")
	keyDropOldestEvt = []byte("dropped_oldest_events")
	keyDropOldestB   = []byte("dropped_oldest_bytes")
	keyDropNewestEvt = []byte("dropped_newest_events")
	keyDropNewestB   = []byte("dropped_newest_bytes")
	keyExpiredEvt    = []byte("expired_events") // see expire.go
	keyExpiredB      = []byte("expired_bytes")
)

const formatVersion = 1

// meta is the state kept in the meta bucket, written in the same transaction
// as the events it describes.
type meta struct {
	nextSeq       uint64 // sequence number the next event gets; never goes back
	removedSeq    uint64 // every sequence up to this one has left (acked or dropped)
	droppedOldest Counter
	droppedNewest Counter
	expired       Counter // removed by Expire: older than the caller's maximum age
	bootID        uint64  // the boot the newest records were written in (bootstamp.go)
	bootFirstSeq  uint64  // the first sequence number written in that boot
	reported      Losses  // of the loss counters, how much was reported (reported.go)
	reportedSeen  bool    // reported was in the file (not a spool of an earlier version)
}

type metaField struct {
	key []byte
	val *uint64
}

func (m *meta) fields() []metaField {
	return append([]metaField{
		{keyNextSeq, &m.nextSeq}, {keyRemovedSeq, &m.removedSeq},
		{keyDropOldestEvt, &m.droppedOldest.Events}, {keyDropOldestB, &m.droppedOldest.Bytes},
		{keyDropNewestEvt, &m.droppedNewest.Events}, {keyDropNewestB, &m.droppedNewest.Bytes},
		{keyExpiredEvt, &m.expired.Events}, {keyExpiredB, &m.expired.Bytes},
	}, append(m.bootFields(), m.reportedFields()...)...)
}

func (m *meta) load(b *bolt.Bucket) {
	for _, f := range m.fields() {
		if v := b.Get(f.key); len(v) == 8 {
			*f.val = binary.BigEndian.Uint64(v)
		}
	}
	if m.nextSeq == 0 {
		m.nextSeq = 1
	}
	m.noteReportedSeen(b)
}

func (m *meta) store(b *bolt.Bucket) error {
	m.reportedSeen = true
	version := uint64(formatVersion)
	for _, f := range append(m.fields(), metaField{keyFormat, &version}) {
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, *f.val)
		if err := b.Put(f.key, v); err != nil {
			return err
		}
	}
	return nil
}

// merge keeps the larger of each Counter: used by salvage, which may find
// several copies of the meta bucket in a damaged file.
func (m *meta) merge(key, v []byte) {
	if len(v) != 8 {
		return
	}
	for _, f := range m.fields() {
		if string(f.key) == string(key) {
			*f.val = max(*f.val, binary.BigEndian.Uint64(v))
		}
	}
}
