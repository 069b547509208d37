package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"largo/auth"
)

func newPasswd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "passwd",
		Short: "Print the hash of a password, for the access file",
		Long: `Ask for a password (twice, without echo, on a terminal; else one line of
standard input) and print its argon2id hash, to put in an access file:

  [[user]]
  name = "alice"
  password = "$argon2id$v=19$m=65536,t=3,p=4$..."

The password itself is written nowhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pw, err := readSecret(e, "Password: ", true)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, auth.HashPassword(pw))
			return nil
		},
	}
	documentEnv(cmd.Flags())
	return cmd
}

// readSecret reads a secret: from the terminal without echo (asked twice
// when confirm), or as one line of standard input.
func readSecret(e *env, prompt string, confirm bool) (string, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(e.stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", failed(err)
		}
		if confirm {
			fmt.Fprint(e.stderr, "Again: ")
			again, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(e.stderr)
			if err != nil {
				return "", failed(err)
			}
			if string(again) != string(b) {
				return "", usageErr(errors.New("the two differ"))
			}
		}
		return checkSecret(string(b))
	}
	if e.stdin == nil {
		return "", usageErr(errors.New("no password given on standard input"))
	}
	line, err := bufio.NewReader(io.LimitReader(e.stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", failed(err)
	}
	return checkSecret(strings.TrimRight(line, "\r\n"))
}

func checkSecret(s string) (string, error) {
	if len(s) < 8 {
		return "", usageErr(errors.New("a password needs at least 8 characters"))
	}
	return s, nil
}
