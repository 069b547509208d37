// Package e2e holds largo's end-to-end tests: they build the real binary,
// run it as a separate process on loopback, and drive it with real clients
// (Go's HTTP client, raw sockets, curl, and others where a test needs them),
// measuring the server from outside through /proc.
//
// A test that needs a program the machine lacks skips with a loud message;
// with LARGO_TEST_STRICT=1 (what `make test` and CI set) it fails instead
// (internal/testenv decides). The harness learns where a server listens
// from its ready line (internal/ready), and tests wait for what they need
// by polling it with a deadline (internal/poll); a sleep is a stretch of
// time a test measures (a stalled client held), not a wait.
//
// The tests are behind the build tag e2e, so that `go test ./...` is the
// fast unit suite; `make test` sets the tag. To run some of them:
//
//	go test -tags e2e ./e2e -run 'TestGet'
//
// Figures of memory and speed are benchmarks (bench_test.go), not
// thresholds of tests. The lab's long runs also need the tag lab
// (`make test-lab`):
//
//	go test -tags 'e2e lab' ./e2e -run '^TestLab'
package e2e
