package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/evspool/evspool/emitter"
)

const namespace = "evspool"

// metric is one figure read from emitter.Stats at scrape time.
type metric struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(s *emitter.Stats, now time.Time) float64
}

func newMetric(name, help string, kind prometheus.ValueType, value func(*emitter.Stats, time.Time) float64) metric {
	return metric{desc: prometheus.NewDesc(namespace+"_"+name, help, nil, nil), kind: kind, value: value}
}

func counter(name, help string, f func(*emitter.Stats) uint64) metric {
	return newMetric(name, help, prometheus.CounterValue, func(s *emitter.Stats, _ time.Time) float64 { return float64(f(s)) })
}

func gauge(name, help string, f func(*emitter.Stats, time.Time) float64) metric {
	return newMetric(name, help, prometheus.GaugeValue, f)
}

// Collector is a prometheus.Collector over an Emitter: it reads Stats at
// each scrape and, when given one, reports a CommitHistogram with it, and
// evspool_build_info.
type Collector struct {
	em      *emitter.Emitter
	commits *CommitHistogram
	metrics []metric
	dropped *prometheus.Desc
	build   prometheus.Metric
}

// NewCollector returns a Collector of em's figures and of the build
// ReadBuildInfo reads. commits may be nil, or the histogram em's
// Options.OnCommit feeds. Register it in one registry.
func NewCollector(em *emitter.Emitter, commits *CommitHistogram) *Collector {
	return &Collector{
		em:      em,
		commits: commits,
		metrics: statsMetrics(),
		dropped: prometheus.NewDesc(namespace+"_events_dropped_total",
			"Events dropped by the full-spool policy, by policy; kept in the spool file across restarts.",
			[]string{"reason"}, nil),
		build: buildInfoMetric(ReadBuildInfo()),
	}
}

// WithBuildInfo makes c report b as evspool_build_info, for a binary that
// knows its version better than its build information does (one whose
// version is set at link time), and returns c. Call it before registering c.
func (c *Collector) WithBuildInfo(b BuildInfo) *Collector {
	c.build = buildInfoMetric(b)
	return c
}

func statsMetrics() []metric {
	return []metric{
		counter("events_emitted_total", "Events committed to the spool by this process.",
			func(s *emitter.Stats) uint64 { return s.Emitted }),
		counter("events_delivered_total", "Events the receiver read, out of the replay window and removed from the spool.",
			func(s *emitter.Stats) uint64 { return s.Delivered }),
		counter("events_unproven_total", "Events acknowledged without proof that the receiver handled them (over TCP its kernel took them; with ack-on-write they were written): neither lost nor known delivered.",
			func(s *emitter.Stats) uint64 { return s.Unproven }),
		counter("events_dead_lettered_total", "Events the receiver kept failing on, set aside in the dead-letter file by this process, so never delivered.",
			func(s *emitter.Stats) uint64 { return s.DeadLettered }),
		counter("spool_errors_total", "Events echoed but not committed to the spool (disk full, I/O error), so never delivered.",
			func(s *emitter.Stats) uint64 { return s.SpoolErrors }),
		counter("echo_errors_total", "Failed writes of the echo to stdout.",
			func(s *emitter.Stats) uint64 { return s.EchoErrors }),
		counter("reconnects_total", "Connections to the receiver made after the first.",
			func(s *emitter.Stats) uint64 { return s.Reconnects }),
		counter("dial_errors_total", "Failed connection attempts to the receiver.",
			func(s *emitter.Stats) uint64 { return s.DialErrors }),
		counter("write_errors_total", "Failed writes to the receiver and waits for it to read.",
			func(s *emitter.Stats) uint64 { return s.WriteErrors }),
		gauge("spool_pending_events", "Events waiting in the spool for delivery.",
			func(s *emitter.Stats, _ time.Time) float64 { return float64(s.Pending) }),
		gauge("spool_pending_bytes", "Bytes of the events waiting in the spool.",
			func(s *emitter.Stats, _ time.Time) float64 { return float64(s.PendingBytes) }),
		gauge("spool_file_bytes", "Size of the spool file on disk.",
			func(s *emitter.Stats, _ time.Time) float64 { return float64(s.Spool.FileBytes) }),
		gauge("spool_max_bytes", "Cap on the size of the spool file on disk.",
			func(s *emitter.Stats, _ time.Time) float64 { return float64(s.Spool.MaxBytes) }),
		gauge("spool_fsync", "1 while each spool commit is fsync'd, 0 when fsync is off (--fsync=false, Options.NoSync).",
			func(s *emitter.Stats, _ time.Time) float64 { return bool01(s.Spool.Fsync) }),
		gauge("oldest_pending_age_seconds", "How long the oldest event in the spool has waited; 0 when the spool is empty.",
			oldestAge),
		gauge("connected", "1 while connected to the receiver, 0 otherwise.",
			func(s *emitter.Stats, _ time.Time) float64 { return bool01(s.Connected) }),
		counter("events_expired_total", "Events older than the maximum age when their turn came, dropped unsent; kept in the spool file across restarts.",
			func(s *emitter.Stats) uint64 { return s.SpoolLosses().Expired }),
		counter("preamble_errors_total", "Connections dropped because the connection preamble failed.",
			func(s *emitter.Stats) uint64 { return s.PreambleErrors }),
		counter("events_refused_total", "Events refused before the spool (a line over the event size limit, an event that is not a line), so never delivered; includes a killed predecessor's unreported ones.",
			func(s *emitter.Stats) uint64 { return s.Refused }),
		counter("events_unreadable_total", "Events lost to a damaged spool file: pending when it was damaged, not recovered by its salvage; kept in the spool file across restarts.",
			func(s *emitter.Stats) uint64 { return s.SpoolLosses().Unreadable }),
		counter("writer_refused_lines_total", "Lines an emitter Writer refused for being over the event size limit.",
			func(s *emitter.Stats) uint64 { return s.WriterRefused }),
		gauge("state_keys", "Keys whose newest event the spool keeps as the state (state keys on).",
			func(s *emitter.Stats, _ time.Time) float64 { return float64(s.Spool.StateKeys) }),
		counter("state_keys_refused_total", "New keys the state did not keep: past the most keys, or too long.",
			func(s *emitter.Stats) uint64 { return s.Spool.StateRefused }),
		counter("state_lines_total", "Events written as the state (on new connections and on request), apart from deliveries.",
			func(s *emitter.Stats) uint64 { return s.StateLines }),
		counter("receiver_lines_total", "Lines the receiver wrote on the connection, state requests included.",
			func(s *emitter.Stats) uint64 { return s.ReceivedLines }),
		counter("receiver_lines_dropped_total", "Lines the receiver wrote that were discarded: over the length limit, or no room in the queue to the embedder.",
			func(s *emitter.Stats) uint64 { return s.ReceivedLong + s.ReceivedDropped }),
	}
}

func oldestAge(s *emitter.Stats, now time.Time) float64 {
	if s.Pending == 0 || s.Spool.OldestTime.IsZero() {
		return 0
	}
	return max(now.Sub(s.Spool.OldestTime).Seconds(), 0)
}

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
	ch <- c.dropped
	ch <- c.build.Desc()
	if c.commits != nil {
		c.commits.h.Describe(ch)
	}
}

// Collect implements prometheus.Collector: it takes one Stats snapshot.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.em.Stats()
	now := time.Now()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(&s, now))
	}
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.DroppedOldest), "drop_oldest")
	ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(s.DroppedNewest), "drop_newest")
	ch <- c.build
	if c.commits != nil {
		c.commits.h.Collect(ch)
	}
}
