package main

import "time"

// fault is what the harness does to the receiver or the producer during a
// run.
type fault string

const (
	faultNone    fault = "none"
	faultRestart fault = "restart" // Kill the receiver, Restart it Down later
	faultUnread  fault = "unread"  // PauseReading, Kill after Pause with data unread, Restart Down later
	faultSigkill fault = "sigkill" // SIGKILL the producer, start it again on the same spool
)

// scenario is one row group of the results.
type scenario struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Mode        string        `json:"producer_mode"` // batch, concurrent or paced
	Duration    time.Duration `json:"duration_ns"`   // how long the producer produces
	Count       int           `json:"count,omitempty"`
	Batch       int           `json:"batch"`
	Producers   int           `json:"producers"`
	Rate        float64       `json:"producer_rate,omitempty"`     // paced mode
	MaxRate     float64       `json:"producer_max_rate,omitempty"` // batch mode cap
	RecvRate    float64       `json:"receiver_rate,omitempty"`
	// RecvHandle is the receiver's handling time per line, as a busy
	// cloud-event-proxy: it reads ahead of what it handled, and a kill loses
	// what it read but had not handled yet.
	RecvHandle time.Duration `json:"receiver_handle_ns,omitempty"`
	Backlog    int           `json:"backlog,omitempty"` // events spooled before the receiver appears
	Fault      fault         `json:"fault"`
	Period     time.Duration `json:"period_ns,omitempty"`
	Pause      time.Duration `json:"pause_ns,omitempty"`
	Down       time.Duration `json:"down_ns,omitempty"`
	Rounds     int           `json:"rounds"`
	// Rates, Warmup, Idle and Contenders are node-cost's (see
	// costScenario): the paced rates, each run in its own producer process,
	// the start left out of the paced window, the idle window after it, and
	// the contenders when -contenders names none.
	Rates      []float64     `json:"rates,omitempty"`
	Warmup     time.Duration `json:"warmup_ns,omitempty"`
	Idle       time.Duration `json:"idle_ns,omitempty"`
	Contenders []string      `json:"contenders,omitempty"`
	Group      string        `json:"group,omitempty"` // run back to back with the other scenarios of the group
	Chart      bool          `json:"-"`
}

// faultRateCap caps the producer in the fault scenarios. Without it a
// contender that drops events while disconnected would accept them as fast
// as a loop can make them, and its event counts would measure that loop.
// It is above what the spooled contenders reach, so for them the producer
// still runs flat out.
const faultRateCap = 200_000

// fullPlan is the matrix `make bench` runs.
func fullPlan() []scenario {
	s := 1 * time.Second
	return []scenario{
		{Name: "steady", Description: "no faults, producer as fast as it can (100 events per Emit)",
			Mode: "batch", Duration: 6 * s, Batch: 100, Fault: faultNone, Rounds: 3, Group: "restart-ratio"},
		{Name: "restarts", Description: "receiver killed every 2 s, back 300 ms later",
			Mode: "batch", Duration: 6 * s, Batch: 100, MaxRate: faultRateCap, Fault: faultRestart, Period: 2 * s, Down: 300 * time.Millisecond, Rounds: 3, Chart: true, Group: "restart-ratio"},
		{Name: "unread-kill", Description: "every 2 s the receiver stops reading for 200 ms, then dies with data unread, back 300 ms later",
			Mode: "batch", Duration: 8 * s, Batch: 100, MaxRate: faultRateCap, Fault: faultUnread, Period: 2 * s, Pause: 200 * time.Millisecond, Down: 300 * time.Millisecond, Rounds: 1, Chart: true},
		{Name: "busy", Description: "receiver handles a line in 1 ms (reading ahead like cloud-event-proxy), killed every 2 s, back 300 ms later; 500 events/s",
			Mode: "paced", Duration: 8 * s, Batch: 1, Rate: 500, RecvHandle: time.Millisecond, Fault: faultRestart, Period: 2 * s, Down: 300 * time.Millisecond, Rounds: 1},
		{Name: "slow", Description: "receiver reads 5,000 events/s; a burst of 20,000 events",
			Mode: "batch", Duration: 10 * s, Count: 20_000, Batch: 100, RecvRate: 5000, Fault: faultNone, Rounds: 1},
		{Name: "sigkill", Description: "producer SIGKILLed every 2 s and restarted (same spool)",
			Mode: "batch", Duration: 8 * s, Batch: 100, MaxRate: faultRateCap, Fault: faultSigkill, Period: 2 * s, Rounds: 1, Chart: true},
		{Name: "backlog", Description: "1,000,000 events spooled with no receiver, then the receiver appears",
			Mode: "batch", Backlog: 1_000_000, Batch: 1000, Fault: faultNone, Rounds: 1},
		{Name: "concurrent", Description: "64 goroutines, one event per Emit",
			Mode: "concurrent", Duration: 4 * s, Batch: 1, Producers: 64, Fault: faultNone, Rounds: 1},
		{Name: "paced", Description: "1,000 events/s, one event per Emit (latency at a realistic rate)",
			Mode: "paced", Duration: 5 * s, Batch: 1, Rate: 1000, Fault: faultNone, Rounds: 1},
		costScenario(false),
	}
}

// quickPlan is the subset `make bench-quick` runs.
func quickPlan() []scenario {
	s := 1 * time.Second
	return []scenario{
		{Name: "steady", Description: "no faults, producer as fast as it can (100 events per Emit)",
			Mode: "batch", Duration: 4 * s, Batch: 100, Fault: faultNone, Rounds: 1, Group: "restart-ratio"},
		{Name: "restarts", Description: "receiver killed every 2 s, back 300 ms later",
			Mode: "batch", Duration: 6 * s, Batch: 100, MaxRate: faultRateCap, Fault: faultRestart, Period: 2 * s, Down: 300 * time.Millisecond, Rounds: 1, Group: "restart-ratio"},
		costScenario(true),
	}
}

var quickContenders = []string{cEvspoolFsync, cReconnectOnly, cWriteThrough}

// drainTimeout bounds the wait for delivery after producing.
func (sc *scenario) drainTimeout() time.Duration {
	if sc.Backlog > 0 {
		return 60 * time.Second
	}
	return 30 * time.Second
}
