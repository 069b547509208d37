// Package testenv tells a test whether the machine has what the test needs
// (a program on PATH, a file that scripts/test-deps installs, the right to
// mount a tmpfs), and when it has not, skips the test with a loud message
// or, under LARGO_TEST_STRICT=1 (what `make test` sets), fails it: a run
// that is meant to test everything cannot pass by skipping.
//
// It is imported only by tests. Its functions keep no state and are safe
// for concurrent use.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// StrictVar is the environment variable that turns a missing component
// from a skip into a failure when it is "1".
const StrictVar = "LARGO_TEST_STRICT"

// Strict reports whether a missing component fails the test instead of
// skipping it.
func Strict() bool { return os.Getenv(StrictVar) == "1" }

// Missing ends t for want of something: it skips t with a message that
// says so loudly, or fails it under LARGO_TEST_STRICT=1. The message says
// what is missing and how to get it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		t.Fatal(StrictVar + "=1: " + msg)
		return
	}
	t.Skip("SKIPPED, NOT TESTED: " + msg)
}

// Program returns the path of the first of names found on PATH (a
// program some systems name differently, as chromium), or ends t through
// Missing when none is.
func Program(t testing.TB, names ...string) string {
	t.Helper()
	if len(names) == 0 {
		t.Fatal("testenv.Program: no program named")
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "%s not found: install it (make test does) to run this test", names[0])
	return ""
}

// File ends t through Missing when path does not exist: a file the test
// set-up installs (scripts/test-deps, which make test runs), described as
// what.
func File(t testing.TB, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		Missing(t, "%s is missing (%s): run scripts/test-deps (make test does)", what, path)
	}
}
