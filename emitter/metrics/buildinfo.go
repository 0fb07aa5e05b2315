package metrics

import (
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

// modulePath is evspool's module, the one whose version build_info reports.
const modulePath = "github.com/evspool/evspool"

// BuildInfo is what evspool_build_info says of the evspool in a binary:
// its labels version, revision and goversion. A field the binary does not
// record is "unknown".
type BuildInfo struct {
	Version   string // evspool's module version, e.g. v0.1.0 or a pseudo-version
	Revision  string // the VCS revision the binary was built from
	GoVersion string // the Go toolchain that built it, e.g. go1.26.8
}

// ReadBuildInfo reads the running binary's BuildInfo (runtime/debug): in
// evspool's own binaries, the main module's version and vcs.revision; in a
// daemon that embeds evspool, the version of the evspool module it was
// built with (after its replace, if any) and the commit a pseudo-version
// names (the daemon's own vcs.revision is not evspool's).
func ReadBuildInfo() BuildInfo {
	b := BuildInfo{Version: unknown, Revision: unknown, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	if bi.Main.Path == modulePath {
		b.Version = known(bi.Main.Version)
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				b.Revision = known(s.Value)
			}
		}
		return b
	}
	for _, m := range bi.Deps {
		if m.Path != modulePath {
			continue
		}
		if m.Replace != nil {
			m = m.Replace // a replace names what was built; a directory has no version
		}
		b.Version = known(m.Version)
		b.Revision = pseudoRevision(m.Version)
	}
	return b
}

// pseudoRevision is the commit prefix a pseudo-version ends with
// (v0.0.0-20261204182602-0123456789ab), else "unknown".
func pseudoRevision(v string) string {
	i := strings.LastIndexByte(v, '-')
	if i < 0 || len(v)-i-1 != 12 {
		return unknown
	}
	for _, r := range v[i+1:] {
		if !strings.ContainsRune("0123456789abcdef", r) {
			return unknown
		}
	}
	return v[i+1:]
}

const unknown = "unknown"

// known is v, or "unknown" for what Go records when it knows no version.
func known(v string) string {
	if v == "" || v == "(devel)" {
		return unknown
	}
	return v
}

// buildInfoMetric is evspool_build_info: always 1, the build in its labels.
func buildInfoMetric(b BuildInfo) prometheus.Metric {
	desc := prometheus.NewDesc(namespace+"_build_info",
		"Always 1; its labels are the running evspool's version, VCS revision and Go version.",
		nil, prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion})
	return prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, 1)
}
