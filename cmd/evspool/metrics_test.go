package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/emitter/metrics"
)

// scrape fetches and parses /metrics.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mfs
}

func value(t *testing.T, mfs map[string]*dto.MetricFamily, name string) float64 {
	t.Helper()
	mf, ok := mfs[name]
	require.True(t, ok, "no %s", name)
	m := mf.GetMetric()[0]
	switch mf.GetType() {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s is a %v", name, mf.GetType())
	return 0
}

var metricsAddr = regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)

// waitMetricsAddr returns the address a run started with --metrics-addr
// 127.0.0.1:0 logged that it serves on.
func waitMetricsAddr(t *testing.T, p *proc) string {
	t.Helper()
	var addr string
	require.Eventually(t, func() bool {
		m := metricsAddr.FindStringSubmatch(p.logs())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 5*time.Second, 5*time.Millisecond)
	return addr
}

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--metrics-addr", "127.0.0.1:0")
	addr := waitMetricsAddr(t, p)

	sent := lines("metrics", 0, 700)
	_, err := p.stdin.Write([]byte(joinLines(sent)))
	require.NoError(t, err)
	waitLines(t, rcv, len(sent), 5*time.Second)
	var mfs map[string]*dto.MetricFamily
	require.Eventually(t, func() bool { // acknowledged a moment after it was read
		mfs = scrape(t, addr)
		return value(t, mfs, "evspool_events_delivered_total") == float64(len(sent))
	}, 5*time.Second, 10*time.Millisecond)

	require.Equal(t, 700.0, value(t, mfs, "evspool_events_emitted_total"))
	require.Equal(t, 0.0, value(t, mfs, "evspool_spool_pending_events"))
	require.Equal(t, 0.0, value(t, mfs, "evspool_spool_pending_bytes"))
	require.Equal(t, 0.0, value(t, mfs, "evspool_oldest_pending_age_seconds"))
	require.Equal(t, 1.0, value(t, mfs, "evspool_connected"))
	require.Equal(t, float64(64<<20), value(t, mfs, "evspool_spool_max_bytes"))
	require.Equal(t, 1.0, value(t, mfs, "evspool_spool_fsync"), "fsync is on unless --fsync=false")
	require.Positive(t, value(t, mfs, "evspool_spool_file_bytes"))
	require.Equal(t, 0.0, value(t, mfs, "evspool_spool_errors_total"))
	require.Len(t, mfs["evspool_events_dropped_total"].GetMetric(), 2, "one per reason")
	h := mfs["evspool_commit_duration_seconds"].GetMetric()[0].GetHistogram()
	require.Positive(t, h.GetSampleCount(), "one observation per commit")
	require.LessOrEqual(t, h.GetSampleCount(), uint64(len(sent)))
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes", "evspool_build_info",
		"evspool_reconnects_total", "evspool_dial_errors_total", "evspool_write_errors_total"} {
		require.Contains(t, mfs, name)
	}

	require.NoError(t, p.stdin.Close())
	require.Equal(t, 0, p.wait(t, 10*time.Second), p.logs())
}

// Everything /metrics exports, evspool's own and the Go and process
// collectors, passes Prometheus' naming rules (promlint, as promtool check
// metrics runs them).
func TestMetricsLintClean(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	commits := metrics.NewCommitHistogram()
	em, err := emitter.Open(filepath.Join(dir, "events.sock"), filepath.Join(dir, "spool"),
		&emitter.Options{NoSync: true, Stdout: io.Discard, OnCommit: commits.Observe})
	require.NoError(t, err)
	defer em.Close(context.Background())
	require.NoError(t, em.Emit(context.Background(), []byte("an event, so that the histogram has a sample")))
	reg := newRegistry(em, commits)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Greater(t, n, 50, "the Go and process collectors are in")
}

// run runs its Go code on one processor unless GOMAXPROCS says otherwise.
func TestRunOneProcUnlessTold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  string
		want float64
	}{{"GOMAXPROCS=", 1}, {"GOMAXPROCS=2", 2}} {
		for _, cmd := range []string{"run", "exec"} {
			t.Run(cmd+" "+c.env, func(t *testing.T) {
				t.Parallel()
				sock, spool := paths(t)
				startSink(t, sock)
				args := []string{cmd, "--socket", sock, "--spool", spool, "--metrics-addr", "127.0.0.1:0"}
				if cmd == "exec" {
					// COMMAND's environment is left as it was.
					args = append(args, "--", "sh", "-c", `echo "child sees [$GOMAXPROCS]"; exec cat`)
				}
				p := startEnv(t, []string{c.env}, args...)
				mfs := scrape(t, waitMetricsAddr(t, p))
				require.Equal(t, c.want, value(t, mfs, "go_sched_gomaxprocs_threads"))
				if cmd == "exec" {
					want := "child sees [" + c.env[len("GOMAXPROCS="):] + "]"
					require.Eventually(t, func() bool { return slices.Contains(p.echoed(), want) },
						5*time.Second, 5*time.Millisecond, "echoed: %q", p.echoed())
				}
				// COMMAND, in a group of its own, ends with its input, not with
				// a killed evspool.
				require.NoError(t, p.stdin.Close())
				require.Equal(t, exitOK, p.wait(t, 20*time.Second), p.logs())
			})
		}
	}
}

// --state-max-keys bounds the state: past it a key is counted and logged.
func TestRunStateMaxKeys(t *testing.T) {
	t.Parallel()
	sock, spool := paths(t)
	rcv := startSink(t, sock)
	p := start(t, "run", "--socket", sock, "--spool", spool, "--metrics-addr", "127.0.0.1:0",
		"--state-key", "k", "--state-max-keys", "1")
	addr := waitMetricsAddr(t, p)
	sent := []string{`{"k":"a"}`, `{"k":"b"}`, `{"k":"c"}`}
	_, err := p.stdin.Write([]byte(joinLines(sent)))
	require.NoError(t, err)
	waitLines(t, rcv, len(sent), 5*time.Second)
	mfs := scrape(t, addr)
	require.Equal(t, 1.0, value(t, mfs, "evspool_state_keys"))
	require.Equal(t, 2.0, value(t, mfs, "evspool_state_keys_refused_total"))
	require.Contains(t, p.logs(), "keys not kept in the state")
}
