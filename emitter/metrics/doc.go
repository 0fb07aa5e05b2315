// Package metrics exports an emitter's figures to Prometheus, so that a
// daemon embedding evspool shows the same metrics as `evspool run
// --metrics-addr`, in its own registry. The core emitter package does not
// import Prometheus; this package does.
//
// A [Collector] reads [emitter.Emitter.Stats] at each scrape, so it costs
// nothing between scrapes. A [CommitHistogram] is fed by
// [emitter.Options.OnCommit], which has to be set before Open:
//
//	commits := metrics.NewCommitHistogram()
//	em, err := emitter.Open(addr, dir, &emitter.Options{OnCommit: commits.Observe})
//	...
//	reg.MustRegister(metrics.NewCollector(em, commits))
//
// # Metrics
//
// Every name starts with evspool_, carries its unit, and counters end in
// _total, following Prometheus' naming conventions:
//
//	evspool_events_emitted_total            counter   events spooled by this process
//	evspool_events_delivered_total          counter   events the receiver read, out of the replay window
//	evspool_events_dead_lettered_total      counter   events set aside in the dead-letter file (poison)
//	evspool_events_dropped_total{reason}    counter   events dropped by the full-spool policy:
//	                                                  reason="drop_oldest" or "drop_newest"
//	evspool_spool_errors_total              counter   events echoed but not spooled (disk full, I/O error)
//	evspool_echo_errors_total               counter   failed writes of the echo to stdout
//	evspool_spool_pending_events            gauge     events waiting in the spool
//	evspool_spool_pending_bytes             gauge     their bytes
//	evspool_spool_file_bytes                gauge     size of the spool file on disk
//	evspool_spool_max_bytes                 gauge     the cap on that size
//	evspool_oldest_pending_age_seconds      gauge     how long the oldest pending event has waited
//	evspool_connected                       gauge     1 while connected to the receiver, else 0
//	evspool_reconnects_total                counter   connections made after the first
//	evspool_dial_errors_total               counter   failed connection attempts
//	evspool_write_errors_total              counter   failed writes and consumption waits
//	evspool_events_expired_total            counter   events older than Options.MaxAge, dropped unsent
//	evspool_preamble_errors_total           counter   connections dropped because Options.Preamble failed
//	evspool_events_refused_total            counter   events refused before the spool (over the size
//	                                                  limit, not a line)
//	evspool_events_unreadable_total         counter   events lost to a damaged spool file (salvage)
//	evspool_writer_refused_lines_total      counter   lines a Writer refused, over the event size limit
//	evspool_commit_duration_seconds         histogram time Emit spent committing to the spool
//
// # Health
//
// [LiveHandler] and [ReadyHandler] answer a liveness and a readiness probe
// from [emitter.Emitter.Alive] and [emitter.Emitter.Ready]: 200 and "ok", or
// 503 and the reason. Serve them beside /metrics as /healthz and /readyz.
//
// # Caveats
//
//   - evspool_events_dropped_total and evspool_events_expired_total are kept
//     in the spool file, so they count the drops of every process that used
//     the spool, not only this one;
//     the other counters start at 0 with the process.
//   - Several emitters in one registry need a label to tell them apart: wrap
//     the registry with prometheus.WrapRegistererWith.
package metrics
