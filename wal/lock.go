package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/evspool/evspool/wal/clock"
)

// lockDir takes an flock(2) on a file beside spool.db, so it still holds
// while compaction renames a fresh file over spool.db. Closing the file
// releases it. It waits for another process's lock on c.
func lockDir(d *spoolDir, timeout time.Duration, c clock.Clock) (*os.File, error) {
	path := d.join(lockFileName)
	f, err := d.open(lockFileName, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("wal: open lock file: %w", err)
	}
	r := lockSchedule(timeout).start(c)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || !r.again() {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w: the spool at %s is locked (waited %v for %s); stop the other evspool or use another --spool directory",
					ErrLocked, d.path, timeout, path)
			}
			return nil, fmt.Errorf("wal: lock %s: %w", path, err)
		}
		_ = r.wait(context.Background())
	}
}
