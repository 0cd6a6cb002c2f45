# gapless: make demo (the main job on a local sandbox), make test (everything CI runs).
GO ?= go

.PHONY: build deps test test-unit demo bench bench-quick bench-unit lint clean

build:
	$(GO) build -o bin/gapless ./cmd/gapless

deps:
	./scripts/install-deps.sh

# Unit tests, the race detector on the concurrent packages, and the
# integration tests against real MariaDB servers the tests start themselves.
test: deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -race -timeout 10m ./internal/binlog/ ./internal/apply/ ./internal/gtid/ ./internal/schedule/

test-unit:
	$(GO) test -short ./...

demo: deps build
	./scripts/demo.sh

# gapless against MariaDB's own replication (bench/): every workload, every
# contender, median of 3 runs (under an hour); bench-quick: W1 and W2, five
# contenders (under 10 minutes). Extra flags: make bench BENCH_FLAGS=--fast
bench: deps build
	BENCH_COMMAND="make bench $(BENCH_FLAGS)" $(GO) run ./bench $(BENCH_FLAGS)

bench-quick: deps build
	BENCH_COMMAND="make bench-quick $(BENCH_FLAGS)" $(GO) run ./bench --quick $(BENCH_FLAGS)

bench-unit:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./internal/gtid/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin gapless-relay
