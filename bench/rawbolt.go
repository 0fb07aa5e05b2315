package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// rawBoltMain is the ceiling evspool's spool is compared with: plain bbolt,
// default options (fsync on), one Update per 1000 Puts of the lines read
// from stdin under 8-byte big-endian keys. It is wal's BenchmarkRawBolt fed
// the way `evspool run` is.
func rawBoltMain(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: bench rawbolt DBFILE < lines")
		return 2
	}
	if err := rawBolt(args[0]); err != nil {
		fmt.Fprintln(os.Stderr, "bench rawbolt:", err)
		return 1
	}
	return 0
}

func rawBolt(path string) error {
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	name := []byte("events")
	sc := bufio.NewScanner(bufio.NewReaderSize(os.Stdin, 1<<20))
	var seq uint64
	for more := true; more; {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			for n := 0; n < 1000; n++ {
				if more = sc.Scan(); !more {
					return sc.Err()
				}
				seq++
				key := binary.BigEndian.AppendUint64(nil, seq)
				if err := b.Put(key, append([]byte(nil), sc.Bytes()...)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
