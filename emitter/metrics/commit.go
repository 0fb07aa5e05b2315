package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CommitHistogram is evspool_commit_duration_seconds: how long each Emit
// spent committing its events to the spool, fsync, group-commit wait and
// (under the Block policy) the wait for space included. Failed commits are
// not observed. Report it through NewCollector.
type CommitHistogram struct {
	h prometheus.Histogram
}

// NewCommitHistogram returns an empty CommitHistogram, with buckets from
// 100 µs (a commit without fsync) to 2.5 s (a disk in trouble).
func NewCommitHistogram() *CommitHistogram {
	return &CommitHistogram{h: prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "commit_duration_seconds",
		Help:      "Time Emit spent committing its events to the spool, fsync included.",
		Buckets:   []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	})}
}

// Observe records one commit; it has emitter.Options.OnCommit's signature
// and is safe for concurrent use.
func (c *CommitHistogram) Observe(d time.Duration, events int, err error) {
	if err != nil || events == 0 {
		return
	}
	c.h.Observe(d.Seconds())
}
