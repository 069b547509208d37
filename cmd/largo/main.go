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
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	env := &env{
		stdout:  os.Stdout,
		stderr:  os.Stderr,
		stdin:   os.Stdin,
		getenv:  os.LookupEnv,
		signals: sig,
		reload:  hup,
	}
	err := run(context.Background(), os.Args[1:], env)
	if err != nil {
		fmt.Fprintln(os.Stderr, "largo:", err)
	}
	os.Exit(exitCode(err))
}
