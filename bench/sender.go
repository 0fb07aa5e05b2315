package main

import (
	"context"
	"fmt"
	"time"

	"github.com/evspool/evspool/emitter"
)

// A sender is one contender inside the producer process.
type sender interface {
	// Emit hands events over. For a spooled contender a nil error means
	// they are committed; for the others, that they were written or dropped.
	Emit(ctx context.Context, events [][]byte) error
	// Drain waits until nothing handed over is still held by the contender,
	// or ctx ends, and returns how many events are still held.
	Drain(ctx context.Context) int
	// Dropped returns how many events the contender gave up on by design.
	Dropped() uint64
	Close() error
}

// Contender names, in the order tables list them.
const (
	cEvspoolFsync   = "evspool-fsync"
	cEvspoolNoFsync = "evspool-nofsync"
	cReconnectOnly  = "reconnect-only"
	cWriteThrough   = "write-through"
	cDque           = "dque"
	cTidwall        = "tidwall-wal"
	cLeastDurable   = "least-durable"
	cLeastMeta      = "least-durable-metabucket"
	cSyslogNG       = "syslog-ng-reliable"
	cEvspoolKeys    = "evspool-fsync-keys"
	// cEvspoolBase is evspool-fsync run by another build of this command
	// ($EVSPOOL_BENCH_BASE, say one built from an earlier commit's tree):
	// node-cost prints evspool-fsync / evspool-fsync-base, a change's cost
	// measured side by side in one run.
	cEvspoolBase = "evspool-fsync-base"
)

// allContenders run in every scenario of the full plan. least-durable and
// least-durable-metabucket are not among them: they are cost yardsticks,
// not delivery contenders, though -contenders can name them anywhere.
var allContenders = []string{cEvspoolFsync, cEvspoolNoFsync, cReconnectOnly, cWriteThrough, cDque, cTidwall, cSyslogNG}

// unavailable says why a contender cannot run on this machine, or "" if it
// can. A run skips such a contender and says so; it installs nothing.
func unavailable(name string) string {
	if name == cSyslogNG {
		if err := syslogNGAvailable(); err != nil {
			return err.Error()
		}
	}
	return ""
}

// spooled reports whether a contender keeps events on disk.
func spooled(name string) bool {
	switch name {
	case cReconnectOnly, cWriteThrough:
		return false
	}
	return true
}

// Socket settings shared by every contender, the emitter's defaults.
const (
	dialTimeout  = time.Second
	writeTimeout = 5 * time.Second
	minBackoff   = 10 * time.Millisecond
	maxBackoff   = 100 * time.Millisecond
	batchEvents  = 1000
	batchBytes   = 256 << 10
	// spoolCap is large enough that no scenario hits a spool's size cap:
	// the benchmark measures delivery, not the full-spool policy.
	spoolCap = 1 << 30
)

// openSender opens contender name towards the receiver at addr, with its
// spool (if any) in dir. fast turns fsync off whatever the contender's
// setting: the backlog scenario fills its spools that way, since filling is
// not what it measures.
func openSender(name, addr, dir string, fast bool) (sender, error) {
	switch name {
	case cEvspoolFsync:
		return openEvspool(addr, dir, !fast)
	case cEvspoolNoFsync:
		return openEvspool(addr, dir, false)
	case cEvspoolKeys:
		return openEvspoolOpts(addr, dir, &emitter.Options{NoSync: fast, StateKey: benchStateKey})
	case cReconnectOnly:
		return newReconnectOnly(addr), nil
	case cWriteThrough:
		return newWriteThrough(addr), nil
	case cDque:
		q, err := openDque(dir, !fast)
		if err != nil {
			return nil, err
		}
		return newQueueSender(addr, q), nil
	case cTidwall:
		q, err := openTidwall(dir, !fast)
		if err != nil {
			return nil, err
		}
		return newQueueSender(addr, q), nil
	case cLeastDurable, cLeastMeta:
		return openLeastDurable(addr, dir, !fast, name == cLeastMeta)
	case cSyslogNG:
		return openSyslogNG(addr, dir)
	}
	return nil, fmt.Errorf("bench: unknown contender %q", name)
}
