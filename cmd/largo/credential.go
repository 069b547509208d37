package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"largo/client"
)

// credential is the token of a get or put and where it came from, so that
// the command printed to resume carries it the same way, and an answer
// that refuses it can say which one was refused. A secret reaches the
// printed command only when the user typed it on the command line; a token
// from the environment or from a file is referred to by its variable or
// its file.
type credential struct {
	token string
	// from names the source in messages: "given with --token", "read
	// from FILE", "from $LARGO_TOKEN"; "" when there is no token.
	from string
	// env is the assignment the resume command starts with, when the token
	// came from the environment: LARGO_TOKEN="$LARGO_TOKEN".
	env string
	// args are the resume command's words that carry the token.
	args []string
}

// tokenFlag and tokenFileFlag are the flags a credential comes from.
const (
	tokenFlag     = "token"
	tokenFileFlag = "token-file"
)

// resolveCredential finds the token of a transfer from the values of
// --token and --token-file, which a variable of the environment may have
// set (a flag typed on the command line wins over a variable, as for every
// flag). A flag whose value is its variable's is taken as coming from the
// variable: the resume command then names the variable, and works all the
// same. A token file holds the token, with spaces around it or not (the
// same file as serve's --token-file).
func resolveCredential(token, tokenFile string, getenv func(string) (string, bool)) (credential, error) {
	fromEnv := func(flag, v string) bool {
		ev, ok := getenv(envName(flag))
		return ok && v != "" && ev == v
	}
	tokenEnv, fileEnv := fromEnv(tokenFlag, token), fromEnv(tokenFileFlag, tokenFile)
	typedToken, typedFile := token != "" && !tokenEnv, tokenFile != "" && !fileEnv
	switch {
	case typedToken && typedFile:
		return credential{}, usageErr(errors.New("--token and --token-file: give one"))
	case typedToken:
		return credential{token: token, from: "given with --" + tokenFlag, args: []string{"--" + tokenFlag, token}}, nil
	case typedFile || fileEnv && !tokenEnv:
		return readTokenFile(tokenFile)
	case tokenEnv && fileEnv:
		return credential{}, usageErr(fmt.Errorf("$%s and $%s: set one", envName(tokenFlag), envName(tokenFileFlag)))
	case tokenEnv:
		v := envName(tokenFlag)
		return credential{token: token, from: "from $" + v, env: v + `="$` + v + `"`}, nil
	}
	return credential{}, nil
}

// readTokenFile reads the token of --token-file: the file's content
// without the spaces around it.
func readTokenFile(path string) (credential, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return credential{}, usageErr(fmt.Errorf("--token-file %s: %v", path, pathErrText(err)))
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case tok == "":
		return credential{}, usageErr(fmt.Errorf("--token-file %s: the file holds no token", path))
	case strings.ContainsFunc(tok, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return credential{}, usageErr(fmt.Errorf("--token-file %s: the token is more than one line", path))
	}
	return credential{token: tok, from: "read from " + path, args: []string{"--" + tokenFileFlag, path}}, nil
}

// command is cmd (shell-quoted words) with the credential: the
// environment assignment before it, the flags after it.
func (c credential) command(cmd string) string {
	for _, a := range c.args {
		cmd += " " + shellQuote(a)
	}
	if c.env != "" {
		cmd = c.env + " " + cmd
	}
	return cmd
}

// refused is the message of an answer that refuses the credential (401,
// 403): what the server said, and what to do.
func (c credential) refused(se *client.StatusError, err error) error {
	const give = "--token TOKEN, --token-file FILE or $LARGO_TOKEN"
	switch {
	case se.Code == 401 && c.from == "":
		return fmt.Errorf("%v: the server wants a token: run again with it (%s)", err, give)
	case se.Code == 401:
		return fmt.Errorf("%v: the server refused the token %s: run again with the right one (%s)", err, c.from, give)
	case c.from == "":
		return fmt.Errorf("%v: this needs a token that may do it: run again with one (%s)", err, give)
	}
	return fmt.Errorf("%v: the token %s may not do this: run again with one that may (%s)", err, c.from, give)
}
