package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/evspool/evspool/wal"
)

// step is one fault, at a fraction of the demo's duration.
type step struct {
	at float64
	do func(d *demo) error
}

// timeline is the faults, in order: a receiver stall then crash, evspool
// SIGKILLed while the receiver is down, the receiver back, evspool SIGKILLed
// mid-delivery, and a second, short receiver crash.
var timeline = []step{
	{0.20, (*demo).stall},
	{0.30, (*demo).crash},
	{0.40, (*demo).killEmitter},
	{0.50, (*demo).restartReceivers},
	{0.70, (*demo).killEmitter},
	{0.80, (*demo).crash},
	{0.83, (*demo).restartReceivers},
}

// faults runs the timeline, each step on time.
func (d *demo) faults(ctx context.Context) error {
	for _, s := range timeline {
		at := d.start.Add(time.Duration(s.at * float64(d.cfg.Duration)))
		t := time.NewTimer(time.Until(at))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		if err := s.do(d); err != nil {
			return err
		}
	}
	return nil
}

// stall stops both receivers reading: what is sent piles up unread in their
// socket buffers, as when cloud-event-proxy hangs before it dies.
func (d *demo) stall() error {
	d.rcvA.PauseReading()
	d.rcvB.PauseReading()
	d.say("receiver stalls: it stops reading, events pile up unread in its socket buffer")
	return nil
}

// crash kills both receivers: what they had not read is gone.
func (d *demo) crash() error {
	d.crashes++
	d.markFault("receiver crash")
	if err := d.rcvA.Kill(); err != nil {
		return err
	}
	if err := d.rcvB.Kill(); err != nil {
		return err
	}
	d.say("receiver crashes (unread data lost with it) and stays down")
	return nil
}

func (d *demo) restartReceivers() error {
	if err := d.rcvA.Restart(); err != nil {
		return err
	}
	if err := d.rcvB.Restart(); err != nil {
		return err
	}
	d.say("receiver back")
	return nil
}

// killEmitter SIGKILLs the evspool child, shows what its spool holds, and
// starts a new one on the same spool. The reconnect-only sender restarts at
// the same moment.
func (d *demo) killEmitter() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.em.waitEchoed(context.Background()); err != nil {
		return err
	}
	old := d.em.pid()
	d.markFault("evspool SIGKILL")
	d.em.kill()
	d.kills++
	d.naive.restart()
	st, _, err := wal.Inspect(d.spool, 0)
	if err != nil {
		return fmt.Errorf("demo: inspect the spool after the kill: %w", err)
	}
	em, err := d.startEmitter()
	if err != nil {
		return err
	}
	d.em = em
	d.say("evspool (pid %d) SIGKILLed with %d events undelivered in its spool; restarted on it (pid %d)",
		old, st.PendingEvents, em.pid())
	return nil
}
