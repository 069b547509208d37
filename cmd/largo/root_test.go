package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

func TestEnvName(t *testing.T) {
	for flag, want := range map[string]string{"listen": "LARGO_LISTEN", "max-conns-per-ip": "LARGO_MAX_CONNS_PER_IP"} {
		if got := envName(flag); got != want {
			t.Errorf("envName(%q) = %q, want %q", flag, got, want)
		}
	}
}

func TestExitCode(t *testing.T) {
	for err, want := range map[error]int{
		nil:                        0,
		errors.New("unknown flag"): 2,
		usageErr(errors.New("x")):  2,
		failed(errors.New("x")):    1,
		&exitError{code: 3, err: errors.New("x")}: 3,
	} {
		if got := exitCode(err); got != want {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, want)
		}
	}
}

// TestApplyEnv runs the CLI in-process with a bad variable: the run fails
// as a usage error naming the variable, before serving anything.
func TestApplyEnv(t *testing.T) {
	var out, errb bytes.Buffer
	env := &env{stdout: &out, stderr: &errb, getenv: func(k string) (string, bool) {
		if k == "LARGO_MAX_CONNS" {
			return "many", true
		}
		return "", false
	}}
	err := run(context.Background(), []string{"serve", t.TempDir()}, env)
	if exitCode(err) != exitUsage || err == nil || !bytes.Contains([]byte(err.Error()), []byte("LARGO_MAX_CONNS")) {
		t.Fatalf("run = %v (exit %d)", err, exitCode(err))
	}
}

// TestRootMakesOnlyTheCommandRun checks that a command line naming a
// command makes that command alone, under its own name, and that any
// other first argument makes them all.
func TestRootMakesOnlyTheCommandRun(t *testing.T) {
	e := quietEnv(io.Discard, io.Discard)
	for _, c := range commands {
		got := newRootFor(e, c.name).Commands()
		if len(got) != 1 || got[0].Name() != c.name {
			t.Errorf("%s: made %d commands, want only it", c.name, len(got))
		}
	}
	for _, first := range []string{"", "help", "--version", "__complete", "serv"} {
		if got := len(newRootFor(e, first).Commands()); got != len(commands) {
			t.Errorf("%q: made %d commands, want all %d", first, got, len(commands))
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, quietEnv(&out, io.Discard)); err != nil || out.Len() == 0 {
		t.Errorf("largo version alone: %v, %q", err, out.String())
	}
}
