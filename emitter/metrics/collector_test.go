package metrics_test

import (
	"context"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/emitter/metrics"
	"github.com/evspool/evspool/internal/refrecv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open starts a receiver (unless down) and an emitter wired to a collector.
func open(t *testing.T, down bool) (*emitter.Emitter, *prometheus.Registry) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "events.sock")
	if !down {
		rcv, err := refrecv.Start("unix", sock, nil)
		require.NoError(t, err)
		t.Cleanup(func() { rcv.Close() })
	}
	commits := metrics.NewCommitHistogram()
	em, err := emitter.Open(sock, filepath.Join(dir, "spool"),
		&emitter.Options{NoSync: true, Stdout: io.Discard, OnCommit: commits.Observe})
	require.NoError(t, err)
	t.Cleanup(func() { em.Close(context.Background()) })
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(metrics.NewCollector(em, commits)))
	return em, reg
}

func emit(t *testing.T, em *emitter.Emitter, n int) {
	t.Helper()
	for range n {
		require.NoError(t, em.Emit(context.Background(), []byte("ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2 freq -1535 path delay 91")))
	}
}

func values(t *testing.T, reg *prometheus.Registry) map[string]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]*dto.Metric{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			out[name] = m
		}
	}
	return out
}

func TestCollectorDelivered(t *testing.T) {
	em, reg := open(t, false)
	emit(t, em, 250)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, em.Flush(ctx))

	v := values(t, reg)
	require.Equal(t, 250.0, v["evspool_events_emitted_total"].GetCounter().GetValue())
	require.Equal(t, 250.0, v["evspool_events_delivered_total"].GetCounter().GetValue())
	require.Contains(t, v, "evspool_events_dead_lettered_total")
	require.Zero(t, v["evspool_events_dead_lettered_total"].GetCounter().GetValue())
	require.Equal(t, 0.0, v["evspool_spool_pending_events"].GetGauge().GetValue())
	require.Equal(t, 0.0, v["evspool_oldest_pending_age_seconds"].GetGauge().GetValue())
	require.Equal(t, 1.0, v["evspool_connected"].GetGauge().GetValue())
	require.Equal(t, 0.0, v["evspool_events_dropped_total{reason=drop_oldest}"].GetCounter().GetValue())
	require.Equal(t, 0.0, v["evspool_events_dropped_total{reason=drop_newest}"].GetCounter().GetValue())
	require.Equal(t, float64(64<<20), v["evspool_spool_max_bytes"].GetGauge().GetValue())
	require.Equal(t, 0.0, v["evspool_spool_fsync"].GetGauge().GetValue(), "the collector's emitter runs with NoSync")
	require.Positive(t, v["evspool_spool_file_bytes"].GetGauge().GetValue())
	require.Equal(t, uint64(250), v["evspool_commit_duration_seconds"].GetHistogram().GetSampleCount())
	for _, name := range []string{"evspool_events_expired_total", "evspool_preamble_errors_total", "evspool_writer_refused_lines_total",
		"evspool_events_refused_total", "evspool_events_unreadable_total"} {
		require.Equal(t, 0.0, v[name].GetCounter().GetValue(), name)
	}
}

func TestCollectorOutage(t *testing.T) {
	em, reg := open(t, true)
	emit(t, em, 10)
	require.Eventually(t, func() bool {
		return values(t, reg)["evspool_dial_errors_total"].GetCounter().GetValue() > 0
	}, 5*time.Second, 10*time.Millisecond)
	v := values(t, reg)
	require.Equal(t, 10.0, v["evspool_spool_pending_events"].GetGauge().GetValue())
	require.Positive(t, v["evspool_spool_pending_bytes"].GetGauge().GetValue())
	require.Positive(t, v["evspool_oldest_pending_age_seconds"].GetGauge().GetValue())
	require.Equal(t, 0.0, v["evspool_connected"].GetGauge().GetValue())
	require.Equal(t, 0.0, v["evspool_events_delivered_total"].GetCounter().GetValue())
}

// The names follow Prometheus' conventions as its own linter checks them.
func TestCollectorLint(t *testing.T) {
	em, _ := open(t, false)
	emit(t, em, 3)
	problems, err := testutil.CollectAndLint(metrics.NewCollector(em, metrics.NewCommitHistogram()))
	require.NoError(t, err)
	require.Empty(t, problems)
	n := testutil.CollectAndCount(metrics.NewCollector(em, nil))
	require.Equal(t, 29, n, "26 figures, two drop reasons and build_info")
}

// evspool_build_info is the library's: a daemon that registers only the
// Collector exports it (its dashboard's instance picker reads it), with
// the Go version that built the binary; WithBuildInfo replaces it.
func TestCollectorBuildInfo(t *testing.T) {
	em, reg := open(t, false)
	var build *dto.Metric
	for name, m := range values(t, reg) {
		if strings.HasPrefix(name, "evspool_build_info") {
			require.Nil(t, build, "one evspool_build_info")
			build = m
		}
	}
	require.NotNil(t, build, "the library's collector exports evspool_build_info")
	require.Equal(t, 1.0, build.GetGauge().GetValue())
	labels := map[string]string{}
	for _, l := range build.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	require.Equal(t, runtime.Version(), labels["goversion"])
	require.NotEmpty(t, labels["version"])
	require.NotEmpty(t, labels["revision"])
	require.Equal(t, metrics.ReadBuildInfo(), metrics.BuildInfo{Version: labels["version"], Revision: labels["revision"], GoVersion: labels["goversion"]})

	want := metrics.BuildInfo{Version: "1.2.3", Revision: "0123abcd", GoVersion: "go1.99"}
	reg2 := prometheus.NewPedanticRegistry()
	require.NoError(t, reg2.Register(metrics.NewCollector(em, nil).WithBuildInfo(want)))
	require.Contains(t, values(t, reg2), "evspool_build_info{goversion=go1.99}{revision=0123abcd}{version=1.2.3}")
}

// The collector passes Prometheus' naming rules (promlint, as promtool
// check metrics runs them), the commit histogram included.
func TestCollectorLintsClean(t *testing.T) {
	em, _ := open(t, false)
	emit(t, em, 3)
	commits := metrics.NewCommitHistogram()
	commits.Observe(time.Millisecond, 3, nil)
	problems, err := testutil.CollectAndLint(metrics.NewCollector(em, commits))
	require.NoError(t, err)
	require.Empty(t, problems)
}

// A refused event is a loss the metrics show, whoever refused it: Emit
// itself, or a producer through Refuse.
func TestCollectorRefused(t *testing.T) {
	em, reg := open(t, false)
	require.ErrorIs(t, em.Emit(context.Background(), []byte("not\na line")), emitter.ErrNewline)
	em.Refuse(2, &emitter.EventSizeError{Size: 65537, Limit: 65536})
	v := values(t, reg)
	require.Equal(t, 3.0, v["evspool_events_refused_total"].GetCounter().GetValue())
	require.Zero(t, v["evspool_events_unreadable_total"].GetCounter().GetValue())
	require.Zero(t, v["evspool_writer_refused_lines_total"].GetCounter().GetValue(), "no Writer was involved")
}
