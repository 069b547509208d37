package main

import (
	"os"
	"testing"
)

// runAsLargo, set in a child's environment, makes the test binary run
// largo's main instead of the tests: the tests that need a real process
// (its descriptors, its environment, its exit code) exec themselves.
const runAsLargo = "LARGO_TEST_RUN_AS_LARGO"

func TestMain(m *testing.M) {
	if os.Getenv(runAsLargo) == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}
