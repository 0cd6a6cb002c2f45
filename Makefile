# gapless: make demo (the main job on a local sandbox), make test (everything CI runs).
GO ?= go

# What --version prints: git describe's version, the commit (+dirty with
# uncommitted changes), the build date. Stamped by the linker, since Go's own
# VCS stamp is missing from git worktrees and under GOFLAGS=-buildvcs=false.
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo +dirty)
DATE := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: build release deps test test-unit test-package demo bench bench-quick bench-unit conformance lint clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/gapless ./cmd/gapless

# A static binary (CGO_ENABLED=0, -trimpath), its man pages and shell
# completions, as a tarball and a Debian package in dist/ (scripts/release.sh).
release:
	VERSION="$(VERSION)" COMMIT="$(COMMIT)" DATE="$(DATE)" GO="$(GO)" ./scripts/release.sh

# The package on this machine: dpkg -i, the unit checked, its command line
# run against a sandbox, the man page (scripts/ci-package.sh; root, Debian).
test-package: release
	./scripts/ci-package.sh

deps:
	./scripts/install-deps.sh

# Unit tests, the race detector on the concurrent packages, and the
# integration tests against real MariaDB servers the tests start themselves.
test: deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -race -timeout 10m ./internal/binlog/ ./internal/apply/ ./internal/gtid/ ./internal/schedule/

# Unit tests alone, in a minute or two: every package but internal/e2e,
# whose integration tests start MariaDB servers for many minutes (-short
# leaves out the other tests that start servers or build the binary).
test-unit:
	$(GO) test -short $$($(GO) list ./... | grep -v '/internal/e2e$$')

demo: deps build
	./scripts/demo.sh

# gapless against MariaDB's own replication (bench/): W1-W11 (W7-W9 and W11
# sized so the fastest contender needs 20 s), a few contenders each, median of
# 3 runs (about an hour); bench-quick: W1 and W2 at 150 000 transactions, six
# contenders, one run (under 10 minutes). Extra flags: make bench BENCH_FLAGS=--fast
bench: deps build
	BENCH_COMMAND="make bench$(if $(BENCH_FLAGS), BENCH_FLAGS='$(BENCH_FLAGS)')" $(GO) run ./bench $(BENCH_FLAGS)

bench-quick: deps build
	BENCH_COMMAND="make bench-quick$(if $(BENCH_FLAGS), BENCH_FLAGS='$(BENCH_FLAGS)')" $(GO) run ./bench --quick $(BENCH_FLAGS)

# mysql-test cases replayed by MariaDB's replica and by gapless (conformance/):
# every shipped list, or LIST=conformance/lists/short.txt; each list writes
# conformance/results/<date>-<list>.md. Extra flags: CONFORMANCE_FLAGS="--jobs 2".
# Fails when gapless failed any case MariaDB's replica passed.
LIST ?= conformance/lists/rpl.txt conformance/lists/binlog.txt conformance/lists/main.txt
conformance: build
	./scripts/install-conformance-deps.sh
	@status=0; for list in $(LIST); do \
		$(GO) run ./conformance --list $$list --gapless bin/gapless $(CONFORMANCE_FLAGS) || status=1; \
	done; exit $$status

bench-unit:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./internal/gtid/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin dist gapless-relay
