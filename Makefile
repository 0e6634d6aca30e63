# mintlify_exporter — see README.md. Every target works from a fresh clone
# with Go installed; `make e2e` also needs Debian's prometheus and
# prometheus-alertmanager (.ci/run installs them).

GO      ?= go
BIN     ?= mintlify_exporter
PKG     := github.com/prometheus/common/version
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REV     ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH  ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w \
	-X $(PKG).Version=$(VERSION) \
	-X $(PKG).Revision=$(REV) \
	-X $(PKG).Branch=$(BRANCH) \
	-X $(PKG).BuildUser=$(shell id -un 2>/dev/null || echo unknown)@$(shell hostname 2>/dev/null || echo unknown) \
	-X $(PKG).BuildDate=$(shell date -u +%Y%m%d-%H:%M:%S)

# The container image (see Dockerfile): the binary is built here for linux and
# copied onto $(IMAGE_BASE). DOCKER may be docker or podman.
DOCKER     ?= docker
IMAGE      ?= mintlify_exporter:$(VERSION)
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
IMAGE_BASE ?= gcr.io/distroless/static-debian12:nonroot

# Where `make run` listens: loopback only, since it enables the job gateway.
RUN_ADDR ?= localhost:9871

.PHONY: all build test test-bin test-ops-race test-plain test-race reference test-loaded lint cyclo run run-replicas run-sentinel bench e2e fuzz soak clean image-binary image image-check release-check mixin chart-files chart-check scale-bench

all: lint test build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

# make test runs two lanes at once (docs/development.md, "Where make test's time goes"):
#  - test-ops-race: the operations engine, the gateway, the leader election, the state stores and
#    the Redis client (internal/ops/..., internal/sharedredis) under the race detector: there goroutines
#    of ours meet over shared state, and their tests wait on leases, Redis and fsync rather than
#    compute, so the detector costs them little;
#  - test-plain: every other package without it.
# make test-race runs the race detector over every package (CI runs it beside make test): 197 s of
# CPU where make test takes 83-92 s, since the detector checks every memory access of the rest's
# JSON of thousands of rows, simulated days of the plan and snapshots' wire form (6-11 times their
# CPU); on two cores that is 103 s, over the 60 s make test may take.
# -p 6: many packages mostly wait (on Redis, leases, fsync), so six at a time keep two cores busy;
# the packages whose tests take longest go first: go test starts packages in the order given, and
# one long package started last runs alone at the end while the other core idles.
# -vet=off: `make lint` runs go vet over every package; the tests do not repeat it.
# -ldflags=-w: linking the test binaries (25-50 MB under -race) is a large part of the CPU of a run;
# without DWARF it takes a third less (stack traces and race reports do not use DWARF).
TEST_FLAGS = -count=1 -vet=off -ldflags=-w
# The exporter binary the black-box tests run (internal/e2e, internal/testutil), built before the
# tests' clock starts: built in a TestMain it counted against go test's -timeout, which a cold
# build on a busy machine spent (go build relinks nothing when the sources did not change).
# `go test` by hand builds it itself (testutil.ExporterBinary).
TEST_BIN   = $(CURDIR)/.build/test/$(BIN)
TEST_ENV   = MINTLIFY_EXPORTER_TEST_BIN=$(TEST_BIN)
OPS_PKGS   = ./internal/ops/... ./internal/sharedredis
SLOW_PKGS  = ./internal/e2e ./alerts ./internal/refresh ./internal/sources ./collector ./internal/history ./internal/status ./apiclient
PLAIN_PKGS = $(SLOW_PKGS) $(shell $(GO) list ./... | grep -vxF "$$($(GO) list $(SLOW_PKGS) $(OPS_PKGS))")
test:
	@$(MAKE) --no-print-directory -j2 --output-sync=target test-ops-race test-plain
test-bin:
	$(GO) build -o $(TEST_BIN) .
test-ops-race: test-bin
	$(TEST_ENV) $(GO) test -race $(TEST_FLAGS) -p 4 $(OPS_PKGS)
test-plain: test-bin
	$(TEST_ENV) $(GO) test $(TEST_FLAGS) -p 6 $(PLAIN_PKGS)
# Every package under the race detector, the slowest first (CI runs it beside make test).
test-race: test-bin
	$(TEST_ENV) $(GO) test -race $(TEST_FLAGS) -p 6 $(SLOW_PKGS) $(shell $(GO) list ./... | grep -vxF "$$($(GO) list $(SLOW_PKGS))")

# The API's public reference as the judge (docs/development.md, "The API's
# reference"): every answer the fake serves and every request the client
# sends validated against internal/conformance/reference/. These tests are also
# part of `make test`; this target re-runs them alone, e.g. after a refresh
# of the vendored files.
reference:
	$(GO) test -count=1 -run 'Reference|APIRef|TolerantReader' ./internal/conformance/ ./apiclient/

# Tools nobody here wrote judge the exporter and its gateway against the
# vendored reference (docs/development.md, "The API's reference"): Prism's
# mock and validating proxy, Portman and Newman, installed pinned from npm
# into .build/npm. Without node it skips with a message, except under
# CI=true. Under a minute once the tools are installed.
.PHONY: conformance
conformance:
	scripts/conformance.sh

# make test while two busy processes per core (4 on two cores) keep every core
# busy twice over (BUSY=n for another count): the tests must pass on a busy
# machine, not only a quiet one.
test-loaded:
	MAKE='$(MAKE)' scripts/test-loaded.sh

lint: cyclo
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# The tagged tests (make e2e, soak, conformance) are built and vetted
	@# here too: a rename must not break them only in CI's later steps.
	$(GO) vet -tags e2e,soak,conformance ./...
	$(GO) tool staticcheck ./...

# No function above cyclomatic 20 (gocyclo, a `go tool` dependency) in the
# non-test Go files; generated files (the standard "Code generated ... DO NOT
# EDIT." line) are left out. Lists the functions over the limit and fails.
CYCLO_OVER ?= 20
cyclo:
	@files=$$(git ls-files -co --exclude-standard '*.go' | grep -v '_test\.go$$' | \
	  xargs grep -L '^// Code generated .* DO NOT EDIT\.$$'); \
	  $(GO) tool gocyclo -over $(CYCLO_OVER) $$files || \
	  { echo "functions above cyclomatic $(CYCLO_OVER): split them (docs/development.md)"; exit 1; }

# make run's flags (the tests of the quick start and of the docs' recipes run these): the sandbox,
# the gateway of every kind, three windows.
RUN_FLAGS = --mintlify.sandbox --web.enable-agent-api --web.enable-deployment-api --web.enable-static-export-api \
	--web.enable-automation-api --analytics.window=1d --analytics.window=7d --analytics.window=30d
run: build
	./$(BIN) $(RUN_FLAGS) --web.listen-address=$(RUN_ADDR)

# Two replicas of make run on localhost:9871 and :9872 sharing a redis-server (run-replicas), or a
# Redis primary, its replica and three sentinels (run-sentinel); Ctrl-C stops every process
# (scripts/run-ha.sh, docs/operations.md "Try it locally").
run-replicas: build
	scripts/run-ha.sh ./$(BIN) replicas $(RUN_FLAGS)
run-sentinel: build
	scripts/run-ha.sh ./$(BIN) sentinel $(RUN_FLAGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./collector/ ./internal/ops/... ./internal/history/ ./internal/sources/ ./internal/server/

# The built binary at 100 projects × every source × 3 windows against a
# floor server, in the same run (figures in BENCHMARKS.md; takes minutes).
scale-bench:
	scripts/scale-bench.sh

# The tests of the files tagged e2e (Prometheus, Alertmanager, several replicas on a Redis,
# Sentinel): the untagged black-box tests beside them run with `make test`.
E2E_TESTS = $(shell grep -ho '^func Test[A-Za-z0-9_]*' $$(grep -l '^//go:build e2e' internal/e2e/*_test.go) | sed 's/^func //' | paste -sd'|')
e2e: test-bin
	$(TEST_ENV) $(GO) test -count=1 -tags e2e -timeout 10m -v -run '^($(E2E_TESTS))$$' ./internal/e2e/

image-binary:
	mkdir -p .build/state
	GOOS=linux GOARCH=$(IMAGE_ARCH) CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o .build/linux-$(IMAGE_ARCH)/$(BIN) .

image: image-binary
	$(DOCKER) build --platform linux/$(IMAGE_ARCH) --build-arg BASE=$(IMAGE_BASE) -t $(IMAGE) .

# Builds the image with podman on a stand-in base and runs its binary as uid
# 65532 on a read-only root (needs root; installs podman when missing).
image-check:
	scripts/image-check.sh

# goreleaser check, a snapshot build, and the built archive's --version.
release-check:
	scripts/release-check.sh

# Generates alerts/mintlify.rules.yml and dashboards/*.json from the monitoring
# mixin (mixin/, jsonnet evaluated by go-jsonnet), then the chart's copies; a
# test fails when the committed files differ from the mixin.
mixin:
	$(GO) run ./mixin/gen
	scripts/chart-files.sh

# Copies alerts/ and dashboards/ into the Helm chart (Helm reads no file
# outside it); a test fails when the copies drift.
chart-files:
	scripts/chart-files.sh

# helm lint, helm template, and every rendered object decoded strictly.
chart-check:
	scripts/chart-check.sh

# The exporter in-process against the fake API for SOAK_DURATION while every
# fault of the fake is toggled, /metrics scraped and jobs submitted; checks
# goroutines, heap, 5xx and lost jobs (figures in BENCHMARKS.md).
SOAK_DURATION ?= 3m
soak:
	SOAK_DURATION=$(SOAK_DURATION) $(GO) test -tags soak -run '^TestSoak$$' -count=1 -timeout 30m -v .

# Every fuzz target for FUZZTIME each (crashers land in testdata/fuzz/ and
# stay there as regression cases).
FUZZTIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) ./scripts/fuzz.sh

clean:
	rm -rf $(BIN) .build dist
