GO ?= go
PKGS := ./...

.PHONY: all build test vet fmt-check bench demo torture clean

all: build

build:
	$(GO) build -o bin/evspool ./cmd/evspool

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The suite CI runs: vet, gofmt, and every test under the race detector.
test: vet fmt-check
	$(GO) test -race -count=1 -timeout 8m $(PKGS)

# Micro-benchmarks of the spool (figures quoted in the README).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 1 ./wal

clean:
	rm -rf bin
