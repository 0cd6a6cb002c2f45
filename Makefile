# gapless: make demo (the main job on a local sandbox), make test (everything CI runs).
GO ?= go

.PHONY: build deps test test-unit demo bench lint clean

build:
	$(GO) build -o bin/gapless ./cmd/gapless

deps:
	./scripts/install-deps.sh

# Unit tests, the race detector on the concurrent packages, and the
# integration tests against real MariaDB servers the tests start themselves.
test: deps
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -count=1 -race -timeout 10m ./internal/binlog/ ./internal/apply/ ./internal/gtid/

test-unit:
	$(GO) test -short ./...

demo: deps build
	./scripts/demo.sh

bench: deps build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./internal/gtid/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf bin gapless-relay
