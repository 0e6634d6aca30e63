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

# Where `make run` listens: loopback only, since it enables the job gateway.
RUN_ADDR ?= localhost:9871

.PHONY: all build test lint run bench e2e fuzz soak clean

all: lint test build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) .

test:
	$(GO) test -race -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

run: build
	./$(BIN) --mintlify.sandbox --web.enable-agent-api --web.listen-address=$(RUN_ADDR) \
	  --visitors.window=1d --visitors.window=7d --visitors.window=30d

bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./collector/ ./internal/tracker/... ./internal/history/

e2e:
	$(GO) test -count=1 -tags e2e -timeout 6m -v ./internal/e2e/

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
	rm -f $(BIN)
