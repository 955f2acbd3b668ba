# berth: `make run` starts a local cluster with the demo; `make test` runs every check.
GO      ?= go
BIN     := bin/berth
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/berthhq/berth/internal/cli.Version=$(VERSION)
FUZZTIME ?= 30s
# go-nvml (internal/devices/gpu) wraps every NVML function, deprecated ones included: the
# C compiler's deprecation warnings say nothing about berth.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
# A binary built with -race sleeps a second at exit so that a race report in flight is
# printed whole (the race detector's atexit_sleep_ms): the tests' binaries, the processes
# they start and the e2e suite's CLI calls (about a thousand) would each take a second longer.
export GORACE ?= atexit_sleep_ms=50

.PHONY: all build run demo-package test fmt-check vet unit e2e e2e-timed soak fuzz bench bench-cluster bench-compare bench-agent bench-dns bench-ui clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/berth

run: build demo-package
	./scripts/run-demo.sh

# The demo's package: the web-demo server and its start script, served by `berth dev
# --packages-dir build/packages` at /packages/web-demo.tar.gz.
demo-package:
	rm -rf build/web-demo && mkdir -p build/web-demo build/packages
	CGO_ENABLED=0 $(GO) build -o build/web-demo/web-demo ./examples/web-demo
	cp examples/web-demo/start.sh build/web-demo/
	tar -czf build/packages/web-demo.tar.gz -C build/web-demo .

test: fmt-check vet
	@$(MAKE) --no-print-directory -j2 --output-sync=target unit e2e-timed

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# Unit tests, and the end-to-end tests (test/e2e builds the berth binary itself) beside
# them with the time of each test (scripts/test-e2e.sh).
unit:
	$(GO) test -race -count=1 -timeout 40m $$($(GO) list ./... | grep -v '/test/e2e$$')

e2e-timed:
	GO=$(GO) ./scripts/test-e2e.sh

e2e:
	$(GO) test -race -count=1 -timeout 40m -v ./test/e2e/

# The soak test (docs/operations.md, Soak test): a crash loop, slow watchers, a flood of
# applies and a scale to the instance limit against a real server and agent for SOAK
# (`make test` runs it for a minute).
SOAK ?= 3m
soak:
	$(GO) test -count=1 -timeout 90m -v -run '^TestSoak$$' ./test/e2e/ -soak=$(SOAK)

# Scheduler benchmarks (the shapes of docs/benchmarks.md); BENCH narrows them.
BENCH ?= .
bench:
	$(GO) test -run XXX -bench '$(BENCH)' -benchmem ./internal/scheduler/

# The cluster benchmark (docs/benchmarks.md, Cluster benchmark): a server and NODES
# simulated nodes on this machine; it reports the cost of their heartbeats.
NODES ?= 1000
bench-cluster: build
	NODES=$(NODES) ./scripts/bench-cluster.sh

# The cluster benchmark of BASE (default HEAD~1) and this tree side by side, ROUNDS
# alternating runs each (docs/benchmarks.md, Cluster benchmark).
bench-compare:
	NODES=$(NODES) ./scripts/bench-compare.sh

# The agent benchmark (docs/benchmarks.md, Agent): one server and one agent running 100
# idle processes, then 100 idle containers; needs root and Docker.
bench-agent: build
	./scripts/bench-agent.sh

# The cluster DNS benchmark (docs/benchmarks.md, Cluster DNS): dnsperf against the
# node's DNS server over 1,000 made-up services of 10 instances, on loopback.
bench-dns: build
	./scripts/bench-dns.sh

# The web console's first paint (docs/benchmarks.md, Web console): its workloads page in
# headless Chromium, on a server whose 120 simulated nodes run 10,000 task groups.
bench-ui:
	$(GO) test -count=1 -timeout 30m -run XXX -bench '^BenchmarkWebConsoleFirstPaint$$' -benchtime 20x -v ./test/e2e/

# Runs every fuzz target for FUZZTIME each. Minimisation is capped so large seeds don't
# stall the run.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$t"; \
	    $(GO) test -run XXX -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin build
