// Package metrics exports an emitter's figures to Prometheus, in the
// embedding program's own registry, so that it shows the same metrics as
// `evspool run --metrics-addr`. The emitter package itself does not import
// Prometheus.
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
// Every name starts with evspool_; docs/operations.md lists them. [LiveHandler]
// and [ReadyHandler] serve /healthz and /readyz beside /metrics.
//
// # Caveats
//
//   - The dropped, expired and unreadable counters are kept in the spool
//     file, so they count every process that used the spool; the others
//     start at 0 with the process.
//   - Several emitters in one registry need a label to tell them apart: wrap
//     the registry with prometheus.WrapRegistererWith.
package metrics
