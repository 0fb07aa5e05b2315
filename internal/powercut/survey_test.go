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
// An event's record (wal/record.go) is stored in bbolt's events bucket under
// its 8-byte sequence number; bbolt writes a leaf element's key and value
// side by side, so a record survives intact where its key, its 20-byte
// header and the event line follow each other and its checksum matches.
// Found that way in some surviving file, the record's bytes reached the
// disk; found in the events bucket of spool.db as bbolt reads it, the
// commit that held it did too.

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
		for id := range intactRecords(img) {
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
// for each record of the events bucket whose checksum holds, then "done".
// A record failing its check, or a key not 8 bytes, is damage: Open would
// salvage the file.
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
			if len(k) != 8 || !soundRecord(k, v) {
				return fmt.Errorf("record %x fails its check", k)
			}
			if id, ok := eventID(string(v[recordHeader:])); ok {
				fmt.Fprintf(w, "event %d\n", id)
			}
			return nil
		})
		if err == nil {
			fmt.Fprintln(w, "done")
		}
		return errors.Join(err, w.Flush())
	})
}

// The record format of wal/record.go (version 2, what evspool writes).
const (
	recordHeader = 20
	keySize      = 8
	v2Flag       = uint64(1) << 63
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// soundRecord tells whether v is a version 2 record of key whose checksum
// holds: crc32c(key | 2 | v[4:]) in v[0:4].
func soundRecord(key, v []byte) bool {
	if len(v) < recordHeader || binary.BigEndian.Uint64(v[4:12])&v2Flag == 0 {
		return false
	}
	c := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, []byte{2})
	return binary.BigEndian.Uint32(v[0:4]) == crc32.Update(c, castagnoli, v[4:])
}

// intactRecords finds the events whose records survive whole anywhere in
// img, wherever bbolt put them (live, free or stale pages): each "pc ID "
// preceded by a key and a header and followed by the line the test sent
// for ID, under a checksum that holds.
func intactRecords(img []byte) map[int]bool {
	ids := map[int]bool{}
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
