GO ?= go
PKGS := ./...

.PHONY: all build test test-go-min vet fmt-check bench bench-quick bench-micro bench-peer bench-malloc-probe demo torture powercut clean package image check-deploy

all: build

build:
	$(GO) build -o bin/evspool ./cmd/evspool

# The README's first command: a receiver and evspool on temporary paths,
# both crashed and restarted; shows that nothing was lost.
demo: build
	./bin/evspool demo

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The suite CI runs: vet, gofmt, and every test under the race detector,
# then each package's time and the five slowest tests (internal/testkit/testtime
# reads go test -json), so the budget stays visible: about 75 s on a
# quiet 2-core machine (90 s is the budget). Tests with a longer version
# run it in make torture.
# -p 3 and -parallel 4: the tests mostly wait (fsync, child processes,
# receivers), so more packages (three, not go test's one a core) and more
# t.Parallel tests than the 2 cores may run at once. The bench (a module of
# its own, which ./... does not reach) is vetted and its few tests run after
# (seconds).
# The longest packages are named first, so that go test starts them first
# (in the order given) rather than last, alone.
# The evspool binary the tests run (cmd/evspool, internal/testkit/torture,
# internal/testkit/powercut) is built once, with -race so that a race in the CLI
# fails the tests that drive it, into a temporary directory, and handed to
# them in EVSPOOL_TEST_BINARY (internal/testkit/testmode.BinaryEnv); a package
# tested on its own builds its own.
TEST_FIRST := ./wal ./internal/testkit/torture ./emitter ./cmd/evspool
test: vet fmt-check
	@bin=$$(mktemp -d) && trap 'rm -rf "$$bin"' EXIT && \
	$(GO) build -race -o "$$bin/evspool" ./cmd/evspool && \
	EVSPOOL_TEST_BINARY="$$bin/evspool" bash -o pipefail -c '$(GO) test -race -count=1 -p 3 -parallel 4 -timeout 8m -json $(TEST_FIRST) $(PKGS) | $(GO) run ./internal/testkit/testtime'
	cd bench && $(GO) vet ./... && $(GO) test -count=1 -timeout 2m ./...

# The oldest Go the library supports is go.mod's go directive (1.24.0: a
# daemon on Go 1.25 can embed it without raising its own). This builds the
# module and vets and tests wal and emitter with that toolchain, which the go
# command fetches from the module proxy (golang.org/toolchain); without
# -race, to stay short (1 to 3 minutes on 2 shared cores). .ci/run runs it
# after make test.
GO_MIN := $(shell sed -n 's/^go //p' go.mod)
test-go-min:
	GOTOOLCHAIN=go$(GO_MIN) $(GO) version
	GOTOOLCHAIN=go$(GO_MIN) $(GO) build ./...
	GOTOOLCHAIN=go$(GO_MIN) $(GO) vet ./wal ./emitter/... ./internal/...
	GOTOOLCHAIN=go$(GO_MIN) $(GO) test -count=1 -timeout 5m ./wal ./emitter
# The .deb and .rpm (packaging/, a module of its own: nfpm as a library):
# a static evspool whose --version is VERSION, its man page, the systemd
# units (Type=notify, watchdog), /etc/default/evspool (/etc/sysconfig/evspool
# in the rpm), the licence, a changelog, the alert rules and dashboard.
# Dated SOURCE_DATE_EPOCH, else the commit's time. Written to dist/.
VERSION ?= 0.1.0~git$(shell git rev-parse --short=8 HEAD 2>/dev/null || echo unknown)
ARCH ?= $(shell $(GO) env GOARCH)
package:
	cd packaging && $(GO) run . -version '$(VERSION)' -revision '$(shell git rev-parse HEAD 2>/dev/null)' -arch $(ARCH) -out ../dist

# The OCI image deploy/kubernetes.yaml's init container copies evspool from
# (packaging/image.go, with go-containerregistry; no container daemon, no
# base image to pull): a static evspool at /usr/local/bin/evspool and its
# evspool-install on an empty base, user 65532, the licence,
# org.opencontainers.image labels, as dist/evspool-image_<tag>_<arch>.tar
# (<tag>: VERSION with - for ~ and +; an OCI layout in a tar: docker load,
# podman load, ctr images import).
image:
	cd packaging && $(GO) run . -image -version '$(VERSION)' -revision '$(shell git rev-parse HEAD 2>/dev/null)' -arch $(ARCH) -out ../dist

# The operations checks CI runs after make test, each module of its own so
# that evspool's stays lean: deploy/ (alert rules, PrometheusRule and
# dashboard through Prometheus' parsers and against a live /metrics scrape,
# kubernetes.yaml strictly into the Kubernetes types; promtool test rules and
# kube-score where installed) and packaging/ (builds the .deb and .rpm,
# inspects and extracts the .deb, lintian where installed, runs the packaged
# evspool --version, systemd-analyze verify and security on the packaged
# units; builds the image, opens it,
# runs the evspool it holds with --version, and checks that kubernetes.yaml
# mounts it). The first run downloads Prometheus', Kubernetes' and
# go-containerregistry's modules (see docs/operations.md, "Deployment").
check-deploy:
	cd deploy && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd packaging && $(GO) vet ./... && $(GO) test -count=1 ./...

# Micro-benchmarks of the spool; each prints its own figures.
bench-micro:
	$(GO) test -run '^$$' -bench . -benchtime 1s -count 1 ./wal

# The benchmark suite (bench/, a module of its own; see bench/README.md):
# contenders side by side under receiver and producer faults, and what each
# costs a node (node-cost). bench-quick is a subset (about a minute and a
# half); bench is the full matrix with charts (under 15 minutes). Each
# writes bench/results/<name>.json and prints a table. Pool several runs'
# library-vs-raw-bbolt rounds with: cd bench && go run . pool results/*.json
bench-quick:
	cd bench && $(GO) run . -quick

bench:
	cd bench && $(GO) run .

# evspool beside syslog-ng's reliable disk buffer (the peer scenarios, and
# node-cost). Needs syslog-ng on the PATH (apt-get install syslog-ng-core);
# the bench skips it, saying so, when it is missing. bench-malloc-probe adds
# the uprobe through which node-cost counts syslog-ng's malloc calls.
bench-peer:
	cd bench && $(GO) run . -scenarios peer -skip-e2e -skip-ceilings -name peer
	cd bench && $(GO) run . -scenarios node-cost -skip-e2e -skip-ceilings -rounds 3 -name node-cost-peer

bench-malloc-probe:
	perf probe -q -x $$(ldconfig -p | awk '/libc.so.6 .*x86-64/ {print $$NF; exit}') --add malloc

# Long fault runs (about 20 minutes on 2 cores, measured 2026-12-05;
# internal/testkit/torture 10 min, FuzzOpen 3-4 min): the chaos loop for 3 minutes, a 1 GB
# line, the rest of internal/testkit/torture (among it a cloud-event-proxy-like
# receiver killed 5 times under 5,000 events, a poison line, half-closed
# receivers), the full-length versions of tests make test samples (wal's
# model with 100 sequences a policy, every page of a spool damaged, ten
# times the cap appended under each policy, a 2,000,000-event start-up
# scan; internal/testkit/testmode), the emitter's tests make test leaves out (a
# receiver frozen 100 s of virtual time, an abandoned write over TCP after
# a stall), then each fuzz target
# (about 15 s each; FuzzOpen's 20,000 executions, each opening, salvaging and
# reopening a damaged spool, 3-4 minutes: it found two bugs at that budget).
# The short versions of all of these run in make test. Fuzz budgets are
# execution counts, not durations: Go 1.26's
# fuzz coordinator can fail a duration run at its deadline with "context
# deadline exceeded" and no crasher (golang/go#75804, fixed in Go 1.27).
torture:
	EVSPOOL_TORTURE=long $(GO) test -count=1 -timeout 15m -v ./internal/testkit/torture
	EVSPOOL_TORTURE=long $(GO) test -count=1 -timeout 10m -run '^(TestModel|TestCorruptEveryPage|TestAckStaysUnderCap|TestCap|TestBlockConcurrent|TestBigSpoolStartup)$$' ./wal ./cmd/evspool
	EVSPOOL_TORTURE=long $(GO) test -race -count=1 -timeout 5m -run '^(TestVirtualTimeFreeze|TestNoTornLineWhenWriteAbandoned)$$' ./emitter
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeRecord$$' -fuzztime 400000x ./wal
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeValue$$' -fuzztime 300000x ./wal
	$(GO) test -run '^$$' -fuzz '^FuzzScanPages$$' -fuzztime 500000x ./internal/boltfile
	$(GO) test -run '^$$' -fuzz '^FuzzDecodePage$$' -fuzztime 150000x ./internal/boltfile
	$(GO) test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime 20000x ./wal
	$(GO) test -run '^$$' -fuzz '^FuzzParseSize$$' -fuzztime 600000x ./cmd/evspool/internal/units
	$(GO) test -run '^$$' -fuzz '^FuzzFormatSize$$' -fuzztime 600000x ./cmd/evspool/internal/units
	$(GO) test -run '^$$' -fuzz '^FuzzParseDuration$$' -fuzztime 600000x ./cmd/evspool/internal/units
	$(GO) test -run '^$$' -fuzz '^FuzzWriter$$' -fuzztime 150000x ./emitter

# Power-cut torture (under 5 minutes on 2 cores): evspool run writing its
# spool into internal/testkit/powercut's FUSE filesystem, which throws away what was
# not fsync'd at each cut; 250 cycles with fsync on and 80 with it off (a
# quarter of them cut twice, ~300 and ~100 cuts), the spool
# drained after each. With fsync off the lost events are split by what the
# spool's files held after each cut: not written out (allowed), only in a
# damaged file (reported), lost any other way (must be 0); see TestPowercut.
# The seed is printed; replay a run with
# EVSPOOL_POWERCUT_SEED=<seed>. Needs /dev/fuse and root (skips, saying so,
# elsewhere). make test runs a few cuts.
powercut:
	@sum=$$(mktemp); \
	EVSPOOL_POWERCUT=long EVSPOOL_POWERCUT_SUMMARY=$$sum $(GO) test -count=1 -timeout 6m -v -run '^TestPowercut$$' ./internal/testkit/powercut; \
	status=$$?; cat $$sum; rm -f $$sum; exit $$status

clean:
	rm -rf bin dist
