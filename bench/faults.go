package main

import (
	"fmt"
	"time"
)

// faultTimes returns the times, unix ns, at which a periodic fault strikes:
// every Period after t0, leaving the last second of producing fault-free.
func (r *rig) faultTimes() []int64 {
	var out []int64
	if r.sc.Period <= 0 {
		return out
	}
	for at := r.sc.Period; at+r.sc.Pause+r.sc.Down < r.sc.Duration-time.Second+time.Millisecond; at += r.sc.Period {
		out = append(out, r.t0+int64(at))
	}
	return out
}

// runReceiverFaults runs one producer while the receiver is killed (and
// restarted) on schedule: the steady, restarts, unread-kill, slow, concurrent
// and paced scenarios.
func (r *rig) runReceiverFaults() error {
	if err := r.startReceiver(); err != nil {
		return err
	}
	c, err := r.spawn(0, r.sc.Duration)
	if err != nil {
		return err
	}
	r.t0 = c.snapshot().readyNs
	for _, at := range r.faultTimes() {
		sleepUntilNs(at)
		if err := r.receiverOutage(); err != nil {
			c.kill()
			return err
		}
	}
	return r.finish(c, 0, r.sc.Duration)
}

// receiverOutage takes the receiver down (after a pause in reading, for
// unread-kill) and brings it back Down later.
func (r *rig) receiverOutage() error {
	from := time.Now().UnixNano()
	if r.sc.Fault == faultUnread {
		r.rcv.PauseReading()
		time.Sleep(r.sc.Pause)
	}
	if err := r.rcv.Kill(); err != nil {
		return err
	}
	time.Sleep(r.sc.Down)
	if err := r.rcv.Restart(); err != nil {
		return fmt.Errorf("receiver restart: %w", err)
	}
	r.outages = append(r.outages, interval{From: from, To: time.Now().UnixNano()})
	return nil
}

// runSigkill SIGKILLs the producer on schedule and starts it again on the
// same spool, with a new generation of sequence numbers; the last one
// produces until Duration is over and drains.
func (r *rig) runSigkill() error {
	if err := r.startReceiver(); err != nil {
		return err
	}
	c, err := r.spawn(0, r.sc.Duration, "-report-each")
	if err != nil {
		return err
	}
	r.t0 = c.snapshot().readyNs
	end := r.t0 + int64(r.sc.Duration)
	gen := 0
	for _, at := range r.faultTimes() {
		sleepUntilNs(at)
		from := time.Now().UnixNano()
		c.kill()
		r.collect(c, gen)
		gen++
		restart := time.Now()
		if c, err = r.spawn(gen, time.Duration(end-restart.UnixNano()), "-report-each"); err != nil {
			return err
		}
		// Delivery may resume once the new process exists; resume time
		// includes its start-up and the reopening of the spool.
		r.outages = append(r.outages, interval{From: from, To: restart.UnixNano()})
		if c.failedToStart() {
			// A contender that cannot reopen its own queue after a crash
			// would crash-loop: that is its result, and the run ends here.
			r.failures = append(r.failures, fmt.Sprintf("restart %d failed: %s", gen, c.tail()))
			return nil
		}
	}
	return r.finish(c, gen, time.Duration(end-time.Now().UnixNano()))
}

// runBacklog fills the spool with no receiver listening, then starts a
// producer process that only drains, then the receiver.
func (r *rig) runBacklog() error {
	from := time.Now().UnixNano()
	fill, err := r.spawn(0, 10*time.Minute, "-count", fmt.Sprint(r.sc.Backlog), "-fast", "-drain-timeout", "0s")
	if err != nil {
		return err
	}
	if err := fill.wait(5 * time.Minute); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	r.collect(fill, 0)
	r.fillRSS = r.samp.takeRSS() // from here on, the draining process's
	drain, err := r.spawn(1, 0, "-mode", "drain")
	if err != nil {
		return err
	}
	time.Sleep(200 * time.Millisecond) // the drainer is dialing a missing socket
	if err := r.startReceiver(); err != nil {
		drain.kill()
		return err
	}
	r.t0 = time.Now().UnixNano()
	r.outages = append(r.outages, interval{From: from, To: r.t0})
	err = drain.wait(r.sc.drainTimeout() + 20*time.Second)
	r.collect(drain, 1)
	return err
}
