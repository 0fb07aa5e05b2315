package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/evspool/evspool/internal/refrecv"
)

// The state scenario's fault modes.
const (
	stNone     = "none"
	stReceiver = "receiver" // the receiver killed 5 times
	stSender   = "sender"   // the sender killed 3 times
	stBoth     = "both"
)

var stateFaults = []string{stNone, stReceiver, stSender, stBoth}

// The streams: every message (state re-sent unchanged), or the changes
// only, as a daemon that sends on change.
const (
	streamAll      = "all"
	streamOnChange = "on-change"
)

// stateConfig is what every run of the state scenario shares.
type stateConfig struct {
	Duration     time.Duration `json:"duration_ns"`      // how long the stream runs
	ReceiverDown time.Duration `json:"receiver_down_ns"` // from a receiver kill to its restart
	SenderDown   time.Duration `json:"sender_down_ns"`   // from a sender kill to its restart
	HandleTime   time.Duration `json:"receiver_handle_ns"`
	Look         time.Duration `json:"look_after_ns"` // from the quiet receiver restart to the look at its state
	Quiet        time.Duration `json:"quiet_ns"`      // no line handled for this long: delivery is over
}

// StateRow is one run: a contender, a rate, a fault mode.
type StateRow struct {
	Contender string  `json:"contender"`
	Rate      float64 `json:"rate"`
	Fault     string  `json:"fault"`
	Stream    string  `json:"stream"`
	Faults    int     `json:"faults"` // kills injected
	Sent      int     `json:"sent"`   // messages the stream produced, each handed over once the sender was up
	Handled   int     `json:"handled"`
	Dropped   uint64  `json:"dropped_by_contender"`
	Keys      int     `json:"keys"` // in the stream's final state
	// EndWrong counts the keys missing or different in the receiver's state
	// once delivery is over; LookWrong the same, Look after a receiver
	// restart with nothing new sent.
	EndWrong  int `json:"end_keys_wrong"`
	LookWrong int `json:"restart_keys_wrong"`
	// FirstLookMissing counts, over the receiver's restarts during the
	// stream, the keys of the state so far missing from its state at the
	// first look: Look after the restart, or just before the next kill.
	FirstLookMissing int `json:"first_look_keys_missing"`
	FirstLooks       int `json:"first_looks"`
	// EndWrongKeys and LookWrongKeys say which keys were wrong, and how.
	EndWrongKeys  []string `json:"end_wrong_keys,omitempty"`
	LookWrongKeys []string `json:"restart_wrong_keys,omitempty"`
	Publishes     pubScore `json:"publishes"`
	ExtraPerFault float64  `json:"extra_per_fault"`
	Seconds       float64  `json:"seconds"`
	Error         string   `json:"error,omitempty"`
}

// faultStep is a kill at an offset from the stream's start: of the
// receiver (restarted ReceiverDown later, while the stream goes on) or of
// the sender (restarted SenderDown later; the stream pauses meanwhile, as
// a dead daemon produces nothing, and goes on where it was).
type faultStep struct {
	at       time.Duration
	receiver bool // else the sender
	restart  bool // the receiver's restart
	look     bool // the first look at the restarted receiver's state
}

// faultSteps spreads 5 receiver kills and 3 sender kills over the stream.
// A short stream shortens the receiver's outages to fit between its kills.
func faultSteps(mode string, cfg stateConfig) []faultStep {
	var steps []faultStep
	d := cfg.Duration
	if mode == stReceiver || mode == stBoth {
		spacing := time.Duration(0.17 * float64(d))
		down := min(cfg.ReceiverDown, spacing*8/10)
		look := min(cfg.Look, spacing-down-spacing/20)
		for i := range 5 {
			at := time.Duration(float64(d) * (0.12 + 0.17*float64(i)))
			steps = append(steps, faultStep{at: at, receiver: true}, faultStep{at: at + down, receiver: true, restart: true},
				faultStep{at: at + down + look, receiver: true, look: true})
		}
	}
	if mode == stSender || mode == stBoth {
		for i := range 3 {
			steps = append(steps, faultStep{at: time.Duration(float64(d) * (0.2 + 0.25*float64(i)))})
		}
	}
	slices.SortStableFunc(steps, func(a, b faultStep) int { return int(a.at - b.at) })
	return steps
}

// stateRig is one run in progress.
type stateRig struct {
	row   *StateRow
	cfg   stateConfig
	v     *refrecv.V2
	s     stateSender
	pause time.Duration // the stream's pauses so far, while the sender was down
	ref   *reference
}

// runState runs one contender at one rate with one fault mode.
func runState(tmp string, bins evspoolBins, msgs []streamMsg, cfg stateConfig, contender string, rate float64, mode, stream string) StateRow {
	row := StateRow{Contender: contender, Rate: rate, Fault: mode, Stream: stream}
	if err := runStateRig(tmp, bins, msgs, cfg, &row); err != nil {
		row.Error = err.Error()
	}
	return row
}

func runStateRig(tmp string, bins evspoolBins, msgs []streamMsg, cfg stateConfig, row *StateRow) error {
	v, s, stop, err := startStatePair(tmp, "state", &refrecv.V2Options{HandleTime: cfg.HandleTime}, row.Contender, bins)
	if err != nil {
		return err
	}
	defer stop()
	r := &stateRig{row: row, cfg: cfg, v: v, s: s}
	start := time.Now()
	ref, err := r.produce(msgs)
	if err != nil {
		return err
	}
	waitQuiet(v, cfg.Quiet, 30*time.Second)
	row.Seconds = time.Since(start).Seconds()
	want := ref.cache.Current()
	row.EndWrongKeys = stateWrong(want, v.Current())
	row.Keys, row.EndWrong, row.Handled = len(want), len(row.EndWrongKeys), v.Lines()
	row.Publishes = scorePublishes(ref.pubs, v.Published())
	row.ExtraPerFault = float64(row.Publishes.Extra) / float64(max(1, row.Faults))
	row.Dropped = r.s.dropped()

	v.Kill() // a quiet restart: nothing new is sent
	if err := v.Restart(); err != nil {
		return err
	}
	time.Sleep(cfg.Look)
	row.LookWrongKeys = stateWrong(want, v.Current())
	row.LookWrong = len(row.LookWrongKeys)
	return nil
}

// produce runs the stream at the row's rate, injecting the faults, and
// returns what a fault-free receiver would hold and publish.
func (r *stateRig) produce(msgs []streamMsg) (*reference, error) {
	st, ref := newStream(msgs), newReference()
	r.ref = ref
	steps := faultSteps(r.row.Fault, r.cfg)
	n := int(r.cfg.Duration.Seconds() * r.row.Rate)
	every := time.Duration(float64(time.Second) / r.row.Rate)
	start := time.Now()
	for i := range n {
		due := time.Duration(i) * every
		for len(steps) > 0 && steps[0].at <= due {
			if err := r.step(steps[0]); err != nil {
				return nil, err
			}
			steps = steps[1:]
		}
		sleepUntilNs(start.Add(r.pause + due).UnixNano())
		line := st.line(time.Now())
		if !ref.add(line) && r.row.Stream == streamOnChange {
			continue // the daemon sends changes only
		}
		r.row.Sent++
		if err := r.s.send(line); err != nil {
			return nil, err
		}
	}
	for _, s := range steps { // restarts due after the last message
		if err := r.step(s); err != nil {
			return nil, err
		}
	}
	return ref, nil
}

// step carries out one kill or restart.
func (r *stateRig) step(s faultStep) error {
	switch {
	case s.look:
		got := r.v.Current()
		for k := range r.ref.cache.Current() {
			if _, ok := got[k]; !ok {
				r.row.FirstLookMissing++
			}
		}
		r.row.FirstLooks++
		return nil
	case s.receiver && s.restart:
		return r.v.Restart()
	case s.receiver:
		r.row.Faults++
		r.v.Kill()
		return nil
	}
	r.row.Faults++
	began := time.Now()
	r.s.kill()
	time.Sleep(r.cfg.SenderDown)
	if err := r.s.restart(); err != nil {
		return fmt.Errorf("restart %s: %w", r.row.Contender, err)
	}
	r.pause += time.Since(began)
	return nil
}

// waitQuiet waits until the receiver has handled no line for quiet, or
// limit passed.
func waitQuiet(v *refrecv.V2, quiet, limit time.Duration) {
	end := time.Now().Add(limit)
	last, since := v.Lines(), time.Now()
	for time.Now().Before(end) && time.Since(since) < quiet {
		time.Sleep(50 * time.Millisecond)
		if n := v.Lines(); n != last {
			last, since = n, time.Now()
		}
	}
}
