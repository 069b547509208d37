// Command largo serves and accepts large files with flat memory.
//
// main only wires the process to run: arguments, standard streams, the
// environment and signals. Everything else is in the packages beside it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	env := &env{
		stdout:  os.Stdout,
		stderr:  os.Stderr,
		getenv:  os.LookupEnv,
		signals: sig,
	}
	err := run(context.Background(), os.Args[1:], env)
	if err != nil {
		fmt.Fprintln(os.Stderr, "largo:", err)
	}
	os.Exit(exitCode(err))
}
