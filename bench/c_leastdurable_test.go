package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestLeastDurableKeepsOnlyTheLastLine: each commit deletes the previous
// line's key, so after n lines the file holds line n alone, and every line
// went to the socket once.
func TestLeastDurableKeepsOnlyTheLastLine(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "r.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		var lines []string
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		got <- lines
	}()
	l, err := openLeastDurable(sock, dir, true, false)
	if err != nil {
		t.Fatal(err)
	}
	events := [][]byte{[]byte("one"), []byte("two"), []byte("three")}
	for _, e := range events {
		if err := l.Emit(context.Background(), [][]byte{e}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if lines := <-got; len(lines) != 3 || lines[0] != "one" || lines[2] != "three" {
		t.Fatalf("receiver got %q", lines)
	}
	if l.Dropped() != 0 {
		t.Fatalf("dropped %d", l.Dropped())
	}
	db, err := bolt.Open(filepath.Join(dir, "least.db"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		var keys []uint64
		var last string
		_ = tx.Bucket(leastBucket).ForEach(func(k, v []byte) error {
			keys = append(keys, binary.BigEndian.Uint64(k))
			last = string(v)
			return nil
		})
		if len(keys) != 1 || keys[0] != 3 || last != "three" {
			t.Fatalf("keys %v, last value %q", keys, last)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLeastDurableDropsWithoutReceiver: with nothing listening each line is
// committed and then dropped, never held back.
func TestLeastDurableDropsWithoutReceiver(t *testing.T) {
	dir := t.TempDir()
	l, err := openLeastDurable(filepath.Join(dir, "none.sock"), dir, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for range 2 {
		if err := l.Emit(context.Background(), [][]byte{[]byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if l.Dropped() != 2 || l.seq != 2 {
		t.Fatalf("dropped %d, seq %d", l.Dropped(), l.seq)
	}
}

// TestLeastDurableMetaBucket: least-durable-metabucket keeps the 13 values
// beside the lines, and after n lines holds next sequence n+1 and removed
// through n-1, each checksummed over its key.
func TestLeastDurableMetaBucket(t *testing.T) {
	dir := t.TempDir()
	l, err := openLeastDurable(filepath.Join(dir, "none.sock"), dir, false, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"one", "two", "three"} {
		if err := l.commit([]byte(e)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "least.db"), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		mb := tx.Bucket(leastMeta)
		if n := mb.Stats().KeyN; n != len(leastMetaKeys) {
			t.Fatalf("meta bucket holds %d keys, want %d", n, len(leastMetaKeys))
		}
		for k, want := range map[string]uint64{"next_sequence": 4, "removed_through": 2, "boot_id": 0} {
			v := mb.Get([]byte(k))
			if len(v) != 12 {
				t.Fatalf("%s: %d bytes", k, len(v))
			}
			if got := binary.BigEndian.Uint64(v); got != want {
				t.Errorf("%s = %d, want %d", k, got, want)
			}
			sum := crc32.Update(crc32.Checksum([]byte(k), castagnoli), castagnoli, v[:8])
			if binary.BigEndian.Uint32(v[8:]) != sum {
				t.Errorf("%s: checksum %x, want %x", k, v[8:], sum)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
