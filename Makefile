# largo's two set-up commands are `make serve` and `make test`.

GO ?= go

.PHONY: serve test test-lab test-engines deps check build bench-quick

# Serve the current folder on http://127.0.0.1:8080/.
serve:
	CGO_ENABLED=0 $(GO) run ./cmd/largo serve

# Install what the tests need, check the code, run every test with the race
# detector, the end-to-end tests (build tag e2e) included; a test that lacks a
# real component it needs fails. `go test ./...` alone is the fast unit suite.
# The lab's long runs are test-lab's. -count=1: the end-to-end tests build
# and run the binary, which go test's cache does not see, so a cached pass
# could stand for a tree it never tested.
test: deps check
	LARGO_TEST_STRICT=1 $(GO) test -race -count=1 -timeout 40m -tags e2e ./...
	$(GO) test -run '^$$' -fuzz FuzzHandler -fuzztime 60000x ./serve
	$(GO) test -run '^$$' -fuzz FuzzLockTokens -fuzztime 20000x ./wire

# The lab's long runs (build tag lab): the whole quick lab, and the lab
# beside nginx, Caddy and Node.js, minutes each.
test-lab: deps
	LARGO_TEST_STRICT=1 $(GO) test -timeout 30m -tags 'e2e lab' -run '^TestLab' -v ./e2e

# Another S3 engine than versitygw (opt-in, minutes): builds SeaweedFS's
# weed once (cached), then runs the s3 store suite and the replica tests
# against `weed mini` on 127.0.0.1 (docs/buckets.md#engines has the results).
test-engines: deps
	./scripts/seaweedfs test

deps:
	./scripts/test-deps

check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags 'e2e lab' ./...
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags 'e2e lab' ./...

# A static binary: no C library mapped, about 1.5 MiB less resident memory.
build:
	CGO_ENABLED=0 $(GO) build -buildvcs=auto -o largo ./cmd/largo

# The lab, small: largo beside the naive buffered server, in under a minute.
bench-quick:
	$(GO) run ./cmd/largo bench --quick
