package powercut

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/evspool/evspool/wal"
)

// A survey is what a machine restarted after a cut finds of the spool,
// read from the mount after PowerOn and before any evspool run opens it
// again: it tells, for each event, whether the cut found it written out.
//
// An event is stored in bbolt's events bucket (wal/record.go) as a record
// of its own under its 8-byte sequence number, or, with the others of its
// commit, in a frame under the number of the frame's first event; bbolt
// writes a leaf element's key and value side by side, so an event survives
// intact where a key is followed by a record or frame holding it whose
// checksum matches. Found that way in some surviving file, the event's
// bytes reached the disk; found in the events bucket of spool.db as bbolt
// reads it, the commit that held it did too.

// fate is what the surveys found of one event, over every cut.
type fate struct {
	// committed: in the committed events bucket of a surviving spool.db
	// that bbolt reads. The next run opens that file and must deliver the
	// event (or salvage it, which keeps every sound record above the
	// removal mark: this one is sound), unless it drops it for room.
	committed bool
	// intact: the record survived whole in a readable spool.db outside its
	// committed tree (a page of a commit whose meta page was lost), or in
	// another file of the spool (a damaged copy kept aside, a compaction or
	// salvage left over). bbolt never reads such pages: from the disk's
	// point of view the commit never happened.
	intact bool
	// inDamaged: the record survived whole in a spool.db that wal calls
	// damaged or bbolt cannot read. Whether its commit reached the disk
	// cannot be told; the next Open salvages the file, keeping the first
	// sound record of each sequence number above the removal mark. That is
	// not proof the spool had to deliver it: with fsync off a cut can lose
	// the marks file's reservation with the commits, numbers are handed out
	// again, and a stale page of a cut commit can hold another event under
	// a number that was delivered (the removal mark covers it) or that a
	// committed record also holds (salvage keeps one). Reported, not
	// asserted.
	inDamaged bool
}

// survey reads the spool directory after a cut and records what survived of
// the events echoed so far.
func (p *powercut) survey() {
	ents, err := os.ReadDir(p.spool)
	if errors.Is(err, os.ErrNotExist) {
		return // not created yet, or its name was never made durable
	}
	require.NoError(p.t, err)
	p.surveys++
	defer func(start time.Time) { p.surveyTime += time.Since(start) }(time.Now())
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), "spool.db") {
			continue
		}
		// Read through read(2), not a mapping: this process serves the
		// filesystem (see doc.go).
		img, err := os.ReadFile(filepath.Join(p.spool, e.Name()))
		require.NoError(p.t, err)
		committed, readable := map[int]bool{}, false
		if e.Name() == "spool.db" {
			committed, readable = p.committedEvents(img)
			if !readable {
				p.damaged++
			}
		}
		intact := intactRecords(img)
		// bbolt reads the committed tree from these bytes: an event it
		// finds there and intactRecords does not is the survey misreading
		// the format, and would hide a committed event lost (class (c))
		// among the ones never written out.
		for id := range committed {
			if !intact[id] {
				p.t.Errorf("survey: event %d is in the committed events bucket of %s but not found intact", id, e.Name())
				break
			}
		}
		for id := range intact {
			f := p.fate(id)
			switch {
			case committed[id]:
				f.committed = true
			case e.Name() == "spool.db" && !readable:
				f.inDamaged = true
			default:
				f.intact = true
			}
		}
	}
}

func (p *powercut) fate(id int) *fate {
	if p.fates == nil {
		p.fates = map[int]*fate{}
	}
	f := p.fates[id]
	if f == nil {
		f = &fate{}
		p.fates[id] = f
	}
	return f
}

// committedEvents lists the events in the committed events bucket of a
// spool.db image, as bbolt reads it. bbolt reads a copy (outside the
// mount) in a child process: a damaged file can make it panic, fault,
// overflow its stack or loop, none of which a recover in this process
// would survive. readable is false when wal's checks find the file damaged
// or bbolt cannot read it: the next Open salvages it.
func (p *powercut) committedEvents(img []byte) (ids map[int]bool, readable bool) {
	path := filepath.Join(p.tmp, "survey", "spool.db")
	require.NoError(p.t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(p.t, os.WriteFile(path, img, 0o600))
	defer os.Remove(path)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$", path)
	// GORACE: a binary built with -race sleeps 1 s at exit by default.
	cmd.Env = append(os.Environ(), childEnv+"=survey-events", "GORACE=atexit_sleep_ms=0")
	out, err := cmd.Output()
	if err != nil || !bytes.HasSuffix(out, []byte("done\n")) {
		return nil, false
	}
	ids = map[int]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, "event "); ok {
			id, err := strconv.Atoi(s)
			require.NoError(p.t, err)
			ids[id] = true
		}
	}
	return ids, true
}

// surveyChild is the child side of committedEvents: it prints "event ID"
// for each event of the events bucket, a record's or a frame's, whose value's
// checksum holds, then "done". A value that is neither a sound record nor a
// sound frame, or a key not 8 bytes, is damage: Open would salvage the file.
func surveyChild(path string) error {
	// wal's own checks first (Inspect reads without changing anything): a
	// file they call damaged is salvaged by Open, and bbolt must not see
	// it (a torn freelist page can make it allocate without end, a torn
	// branch page loop).
	if _, _, err := wal.Inspect(filepath.Dir(path), 0); err != nil {
		return err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("events"))
		if b == nil || tx.Bucket([]byte("meta")) == nil {
			return errors.New("events or meta bucket missing")
		}
		w := bufio.NewWriter(os.Stdout)
		err := b.ForEach(func(k, v []byte) error {
			events, ok := soundValue(k, v)
			if !ok {
				return fmt.Errorf("value %x fails its check", k)
			}
			for _, e := range events {
				if id, ok := eventID(string(e)); ok {
					fmt.Fprintf(w, "event %d\n", id)
				}
			}
			return nil
		})
		if err == nil {
			fmt.Fprintln(w, "done")
		}
		return errors.Join(err, w.Flush())
	})
}

// The value formats of wal/record.go, mirrored here rather than imported:
// wal keeps them unexported, and the survey is a second reading of what the
// spool writes, not wal's own. All integers big-endian; the key is the
// 8-byte sequence number of the value's (first) event.
//
// Version 2, a record, one event:
//
//	crc32c (4) | wall unix ns, bit 63 set (8) | CLOCK_BOOTTIME ns, bit 63 clear (8) | event bytes
//
// Version 3, a frame, consecutive events of one commit, numbered key, key+1, ...:
//
//	crc32c (4) | wall unix ns, bit 63 set (8) | CLOCK_BOOTTIME ns, bit 63 set (8) |
//	count uvarint (>= 2) | count lengths, uvarint each | the events' bytes
//
// The checksum is crc32c-Castagnoli over the key, one byte for the version
// (not stored) and everything after the checksum.
const (
	keySize      = 8
	recordHeader = 20 // crc32c | wall ns | boot ns: both versions
	v2Flag       = uint64(1) << 63
	v2Version    = 2
	v3Version    = 3
	// maxFrame bounds the frames intactRecords looks for: wal keeps a
	// frame's element to half a leaf page's room, about 2 KiB with 4 KiB
	// pages (two fill a page), 32 KiB with the largest pages bbolt takes.
	maxFrame = 32 << 10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// valueSum is the checksum of a value of the given version under key.
func valueSum(key []byte, version byte, rest []byte) uint32 {
	c := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, []byte{version})
	return crc32.Update(c, castagnoli, rest)
}

// soundRecord tells whether v is a version 2 record of key whose checksum
// holds: crc32c(key | 2 | v[4:]) in v[0:4].
func soundRecord(key, v []byte) bool {
	if len(key) != keySize || len(v) < recordHeader || binary.BigEndian.Uint64(v[4:12])&v2Flag == 0 {
		return false
	}
	return binary.BigEndian.Uint32(v[0:4]) == valueSum(key, v2Version, v[4:])
}

// soundFrame returns the events of v if it is a version 3 frame of key whose
// checksum holds, crc32c(key | 3 | v[4:]) in v[0:4], and whose count (2 or
// more) and lengths account for its bytes exactly, as wal's decodeValue
// wants them. The events alias v.
func soundFrame(key, v []byte) ([][]byte, bool) {
	if len(key) != keySize || len(v) < recordHeader ||
		binary.BigEndian.Uint64(v[4:12])&v2Flag == 0 || binary.BigEndian.Uint64(v[12:20])&v2Flag == 0 {
		return nil, false
	}
	if binary.BigEndian.Uint32(v[0:4]) != valueSum(key, v3Version, v[4:]) {
		return nil, false
	}
	rest := v[recordHeader:]
	count, k := binary.Uvarint(rest)
	if k <= 0 || count < 2 || count > uint64(len(rest)) ||
		binary.BigEndian.Uint64(key)+count-1 < binary.BigEndian.Uint64(key) {
		return nil, false
	}
	rest = rest[k:]
	lens := make([]uint64, count)
	total := uint64(0)
	for i := range lens {
		l, k := binary.Uvarint(rest)
		if k <= 0 {
			return nil, false
		}
		rest = rest[k:]
		lens[i] = l
		total += l
		if total > uint64(len(rest)) {
			return nil, false
		}
	}
	if total != uint64(len(rest)) {
		return nil, false
	}
	events := make([][]byte, count)
	for i, l := range lens {
		events[i], rest = rest[:l:l], rest[l:]
	}
	return events, true
}

// soundValue returns the events of the value v stored under key: a sound
// record's one, or a sound frame's; false for anything else.
func soundValue(key, v []byte) ([][]byte, bool) {
	if soundRecord(key, v) {
		return [][]byte{v[recordHeader:]}, true
	}
	return soundFrame(key, v)
}

// intactRecords finds the events whose values survive whole anywhere in
// img, wherever bbolt put them (live, free or stale pages, inline buckets,
// pages whose header is torn or gone), without bbolt and without trusting
// any page structure: bbolt writes a leaf element's key and value side by
// side, so an event survives where an 8-byte key is followed by a sound
// value holding the line the test sent for it. Records are found from
// their event: each "pc ID " preceded by a key and a header and followed
// by the line for ID, under a checksum that holds. Frames are found from
// their header (see intactFrames).
func intactRecords(img []byte) map[int]bool {
	ids := map[int]bool{}
	intactFrames(img, ids)
	for o := 0; ; {
		i := bytes.Index(img[o:], []byte("pc "))
		if i < 0 {
			return ids
		}
		o += i
		start := o - recordHeader - keySize
		o += 3
		if start < 0 {
			continue
		}
		rest := img[o:min(len(img), o+24)]
		n := bytes.IndexByte(rest, ' ')
		id, err := strconv.Atoi(string(rest[:max(n, 0)]))
		if n <= 0 || err != nil || id < 0 {
			continue
		}
		line := eventLine(id)
		end := start + keySize + recordHeader + len(line)
		if end > len(img) || !bytes.Equal(img[o-3:end], []byte(line)) {
			continue
		}
		if soundRecord(img[start:start+keySize], img[start+keySize:end]) {
			ids[id] = true
		}
	}
}

// intactFrames adds to ids the events of every sound frame in img. A
// frame's first event is preceded by its lengths, not by its header, so
// frames are found the other way round: at every byte offset taken as a
// key, a value whose wall and boot times both have bit 63 set (a frame's
// mark; a record's boot time has it clear, event lines are ASCII) is sized
// by its own count and lengths, and checked as wal reads it once its first
// event begins as the test's lines do. Only a frame whose checksum holds
// counts, and of it only the events that are the lines the test sent.
// Every offset, not only those of the elements of pages that look like
// leaves: a leaf node of 3 or 4 frames spans two pages (bbolt does not
// split a node of 4 elements or fewer), and a cut can keep its second page
// without the first, which holds the page header and the element table.
// The two bit tests pass one offset in four at worst (checksums), and rarely
// the count and lengths after them: a pass over tens of MB takes tens of
// milliseconds.
func intactFrames(img []byte, ids map[int]bool) {
	for o := 0; o+keySize+recordHeader+2 <= len(img); o++ {
		v := img[o+keySize:]
		if v[4]&0x80 == 0 || v[12]&0x80 == 0 {
			continue
		}
		size, first := frameExtent(v[:min(len(v), maxFrame)])
		if size == 0 || !bytes.HasPrefix(v[first:size], []byte("pc ")) {
			continue
		}
		events, ok := soundFrame(img[o:o+keySize], v[:size])
		if !ok {
			continue
		}
		for _, e := range events {
			if id, ok := eventID(string(e)); ok && id >= 0 && string(e) == eventLine(id) {
				ids[id] = true
			}
		}
		o += keySize + size - 1 // a sound frame holds no other
	}
}

// frameExtent reads the count and lengths of what may be a frame at the
// start of v: its size and where its first event begins, or 0 if they do
// not fit in v.
func frameExtent(v []byte) (size, first int) {
	if len(v) <= recordHeader {
		return 0, 0
	}
	rest := v[recordHeader:]
	count, k := binary.Uvarint(rest)
	if k <= 0 || count < 2 || count > uint64(len(rest)) {
		return 0, 0
	}
	o := recordHeader + k
	total := uint64(0)
	for range count {
		l, k := binary.Uvarint(v[o:])
		if k <= 0 {
			return 0, 0
		}
		o += k
		total += l
		if total > uint64(len(v)) {
			return 0, 0
		}
	}
	if uint64(o)+total > uint64(len(v)) {
		return 0, 0
	}
	return o + int(total), o
}
