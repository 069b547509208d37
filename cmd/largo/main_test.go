package main

import (
	"io"
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

// quietEnv is the env of an in-process run with no environment variables,
// writing its output to out and its errors to errs.
func quietEnv(out, errs io.Writer) *env {
	return &env{stdout: out, stderr: errs, getenv: func(string) (string, bool) { return "", false }}
}
