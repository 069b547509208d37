package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// env is what a run of largo receives from its process.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) (string, bool)
	signals        <-chan os.Signal
	// reload delivers the signal to read the configuration again (SIGHUP).
	reload <-chan os.Signal
	stdin  io.Reader
}

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 3
)

// exitError carries the exit code of a failure.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErr marks err as the user's to fix: a bad flag, folder or address.
func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// failed marks err as a failure of the work itself.
func failed(err error) error { return &exitError{code: exitFailed, err: err} }

// exitCode maps the error of run to the process's exit code. Errors that
// carry no code come from parsing the command line: usage errors.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage
}

// run is largo's command line: it parses args and runs the command.
func run(ctx context.Context, args []string, e *env) error {
	first := ""
	if len(args) > 0 {
		first = args[0]
	}
	root := newRootFor(e, first)
	root.SetArgs(args)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	return root.ExecuteContext(ctx)
}

// commands makes each of largo's commands, by the name that runs it.
var commands = []struct {
	name string
	make func(*env) *cobra.Command
}{
	{"serve", newServe}, {"get", newGet}, {"put", newPut}, {"precompress", newPrecompress},
	{"digest", newDigest}, {"usage", newUsage}, {"hooks", newHooksCmd}, {"bench", newBench},
	{"share", newShare}, {"access", newAccess}, {"passwd", newPasswd}, {"s3key", newS3Key},
	{"version", newVersion}, {"healthcheck", newHealthcheck},
}

// newRoot returns the root command with every command below it.
func newRoot(e *env) *cobra.Command { return newRootFor(e, "") }

// newRootFor returns the root command with, when first (the first
// argument) names one of the commands, only that one below it, and every
// one otherwise (help, completion, a flag, a mistyped name). A server
// then never builds the other commands and their flags: some sixty flags'
// values, usages and defaults, and the code that makes them, which would
// stay resident for as long as it serves.
func newRootFor(e *env, first string) *cobra.Command {
	root := &cobra.Command{
		Use:   "largo",
		Short: "Serve and accept large files with flat memory",
		Long: `largo serves a folder of files of any size to any number of clients, fast or
slow, with memory that stays flat: downloads go through sendfile with ranges
and resumes, stalled and vanished clients are cut and their files closed.

Every flag can also be set with an environment variable: LARGO_ followed by
the flag's name in capitals with dashes as underscores (--max-conns is
LARGO_MAX_CONNS). A flag on the command line wins over the variable.`,
		Version:       ownVersion().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return applyEnv(cmd.Flags(), e.getenv)
		},
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	for _, c := range commands {
		if c.name == first {
			root.AddCommand(c.make(e))
			return root
		}
	}
	for _, c := range commands {
		root.AddCommand(c.make(e))
	}
	return root
}

// envName is the environment variable of a flag.
func envName(flag string) string {
	return "LARGO_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// noEnvAnnotation marks a flag that no environment variable sets: one
// whose variable means something else (LARGO_PASSWORD is a user's
// password, not share's --password).
const noEnvAnnotation = "largo-no-env"

// noEnv marks the flags names as set by no environment variable.
func noEnv(fs *pflag.FlagSet, names ...string) {
	for _, n := range names {
		fs.SetAnnotation(n, noEnvAnnotation, []string{"true"})
	}
}

// hasEnv reports whether an environment variable may set f.
func hasEnv(f *pflag.Flag) bool { return f.Annotations[noEnvAnnotation] == nil }

// documentEnv appends each flag's environment variable to its help.
func documentEnv(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if hasEnv(f) {
			f.Usage += " [$" + envName(f.Name) + "]"
		}
	})
}

// applyEnv sets every flag not given on the command line from its
// environment variable, if that is set.
func applyEnv(fs *pflag.FlagSet, getenv func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "help" || !hasEnv(f) {
			return
		}
		v, ok := getenv(envName(f.Name))
		if !ok {
			return
		}
		if serr := fs.Set(f.Name, v); serr != nil {
			err = usageErr(fmt.Errorf("$%s: %v", envName(f.Name), serr))
		}
	})
	return err
}
