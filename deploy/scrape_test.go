package deploy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// exported is what a running evspool's /metrics holds: for each series name
// a PromQL query can select (a histogram's _bucket, _sum and _count), the
// label names its samples carry.
type exported map[string]map[string]bool

// targetLabels are the labels every scrape gives evspool's series, a
// hand-written job's (the packages' case) and the ServiceMonitor's, which
// adds more (targetLabelsOf): the rules and panels key on these only.
var targetLabels = []string{"instance", "job"}

var scrapeOnce = sync.OnceValues(scrapeEvspool)

// scrape returns the families and raw text of a live /metrics scrape of an
// evspool built from this repository, after it delivered a few events.
func scrape(t *testing.T) (exported, []byte) {
	t.Helper()
	s, err := scrapeOnce()
	require.NoError(t, err)
	return s.series, s.raw
}

type scraped struct {
	series exported
	raw    []byte
}

func scrapeEvspool() (*scraped, error) {
	dir, err := os.MkdirTemp("", "evspool-deploy")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "evspool")
	build := exec.Command("go", "build", "-o", bin, "./cmd/evspool")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build evspool: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sock := filepath.Join(dir, "events.sock")
	sink := exec.CommandContext(ctx, bin, "sink", "--socket", sock)
	if err := sink.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = sink.Process.Kill(); _ = sink.Wait() }()
	run := exec.CommandContext(ctx, bin, "run", "--socket", sock, "--spool", filepath.Join(dir, "spool"),
		"--metrics-addr", "127.0.0.1:0", "--replay-linger", "10ms")
	// stdin stays open: at end of input run would deliver and exit.
	stdin, err := run.StdinPipe()
	if err != nil {
		return nil, err
	}
	defer stdin.Close()
	stderr, err := run.StderrPipe()
	if err != nil {
		return nil, err
	}
	run.Stdout = io.Discard
	if err := run.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = run.Process.Kill(); _ = run.Wait() }()
	addr, err := metricsAddr(stderr)
	if err != nil {
		return nil, err
	}
	line := "ptp4l[1095550.490]: [ptp4l.0.config] master offset 52 s2 freq -1535\n"
	if _, err := io.WriteString(stdin, strings.Repeat(line, 20)); err != nil {
		return nil, err
	}
	return scrapeUntilDelivered(ctx, addr, 20)
}

// metricsAddr reads evspool's log until it says where it serves metrics,
// then keeps draining it.
func metricsAddr(stderr io.Reader) (string, error) {
	re := regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return m[1], nil
		}
	}
	return "", fmt.Errorf("evspool exited without serving metrics: %v", sc.Err())
}

func scrapeUntilDelivered(ctx context.Context, addr string, n float64) (*scraped, error) {
	for {
		raw, mfs, err := get(addr)
		if err != nil {
			return nil, err
		}
		if d := mfs["evspool_events_delivered_total"]; d != nil && d.GetMetric()[0].GetCounter().GetValue() == n {
			return &scraped{series: seriesOf(mfs), raw: raw}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("evspool did not deliver %v events: %w", n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func get(addr string) ([]byte, map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	return raw, mfs, err
}

func seriesOf(mfs map[string]*dto.MetricFamily) exported {
	out := exported{}
	add := func(name string, m *dto.Metric, extra ...string) {
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, l := range m.GetLabel() {
			out[name][l.GetName()] = true
		}
		for _, l := range extra {
			out[name][l] = true
		}
	}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
			case dto.MetricType_SUMMARY:
				add(name, m, "quantile")
				add(name+"_sum", m)
				add(name+"_count", m)
			default:
				add(name, m)
			}
		}
	}
	return out
}

// The live scrape itself lints clean, as promtool check metrics would
// say: evspool's metrics and the Go and process collectors'.
func TestScrapeLintsClean(t *testing.T) {
	series, raw := scrape(t)
	require.Contains(t, series, "evspool_events_delivered_total")
	require.Contains(t, series, "evspool_commit_duration_seconds_bucket")
	problems, err := promlint.New(bytes.NewReader(raw)).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
}
