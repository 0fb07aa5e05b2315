package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// commitBuckets are the bounds, in seconds, of CommitHistogram: from 100 µs
// (a commit without fsync) to 2.5 s (a disk in trouble). An fsync'd commit
// on an SSD usually lands between 1 and 10 ms.
var commitBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// CommitHistogram is the histogram evspool_commit_duration_seconds: how
// long each Emit call spent committing its events to the spool, fsync and
// group-commit wait included (and, under the Block policy, the wait for
// space). Failed commits are not observed; evspool_spool_errors_total counts
// them. Report it through NewCollector.
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
		Buckets:   commitBuckets,
	})}
}

// Observe records one commit. Its signature is emitter.Options.OnCommit's,
// so it can be passed there as it is. It is safe for concurrent use.
func (c *CommitHistogram) Observe(d time.Duration, events int, err error) {
	if err != nil || events == 0 {
		return
	}
	c.h.Observe(d.Seconds())
}
