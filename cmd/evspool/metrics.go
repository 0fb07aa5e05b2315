package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/evspool/evspool/emitter"
	"github.com/evspool/evspool/emitter/metrics"
)

// metricsServer serves /metrics on --metrics-addr, with /healthz (the
// drainer runs and is not wedged) and /readyz (the spool is usable) for
// probes. A nil one does nothing.
type metricsServer struct {
	ln  net.Listener
	srv *http.Server
}

// listenMetrics binds addr, or returns nil when addr is empty.
func listenMetrics(addr string) (*metricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot serve metrics on --metrics-addr %s: %w", addr, err)
	}
	return &metricsServer{ln: ln}, nil
}

// serve starts answering scrapes with em's figures, the commit histogram,
// the Go runtime's and the process's metrics and evspool_build_info.
func (m *metricsServer) serve(em *emitter.Emitter, commits *metrics.CommitHistogram, logger *slog.Logger) {
	if m == nil {
		return
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(newRegistry(em, commits), promhttp.HandlerOpts{}))
	mux.Handle("/healthz", metrics.LiveHandler(em))
	mux.Handle("/readyz", metrics.ReadyHandler(em))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	logger.Info("serving metrics", "addr", m.ln.Addr().String(), "path", "/metrics", "probes", "/healthz /readyz")
	go func() {
		if err := m.srv.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics server stopped", "error", err)
		}
	}()
}

// newRegistry holds what /metrics exports: em's figures, the commit
// histogram, the Go runtime's and the process's metrics and
// evspool_build_info.
func newRegistry(em *emitter.Emitter, commits *metrics.CommitHistogram) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cliCollectors(em, commits)...)
	return reg
}

func (m *metricsServer) close() {
	if m == nil {
		return
	}
	if m.srv == nil {
		m.ln.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_ = m.srv.Shutdown(ctx)
}

// cliCollectors are what /metrics reports (docs/operations.md lists them;
// docs_test.go checks the list).
func cliCollectors(em *emitter.Emitter, commits *metrics.CommitHistogram) []prometheus.Collector {
	build := metrics.ReadBuildInfo()
	build.Version = version // what --version prints, set at link time by make package
	return []prometheus.Collector{
		metrics.NewCollector(em, commits).WithBuildInfo(build),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
}
