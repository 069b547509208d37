package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/client"
)

func TestResolveCredential(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok en")
	if err := os.WriteFile(file, []byte("  file-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	twoLines := filepath.Join(dir, "two")
	os.WriteFile(twoLines, []byte("a\nb\n"), 0o600)
	for _, c := range []struct {
		name             string
		token, tokenFile string
		env              map[string]string
		want             string // the resume command of "largo get U"
		wantToken        string
		usage            bool
	}{
		{name: "none", want: "largo get U"},
		{name: "typed", token: "typed secret", want: "largo get U --token 'typed secret'", wantToken: "typed secret"},
		{name: "typed over the variable", token: "typed", env: map[string]string{"LARGO_TOKEN": "env-secret"}, want: "largo get U --token typed", wantToken: "typed"},
		{name: "variable", token: "env-secret", env: map[string]string{"LARGO_TOKEN": "env-secret"}, want: `LARGO_TOKEN="$LARGO_TOKEN" largo get U`, wantToken: "env-secret"},
		{name: "file", tokenFile: file, want: "largo get U --token-file '" + file + "'", wantToken: "file-secret"},
		{name: "file from its variable", tokenFile: file, env: map[string]string{"LARGO_TOKEN_FILE": file}, want: "largo get U --token-file '" + file + "'", wantToken: "file-secret"},
		{name: "typed file over the token variable", token: "env-secret", tokenFile: file, env: map[string]string{"LARGO_TOKEN": "env-secret"}, want: "largo get U --token-file '" + file + "'", wantToken: "file-secret"},
		{name: "typed token over the file variable", token: "typed", tokenFile: file, env: map[string]string{"LARGO_TOKEN_FILE": file}, want: "largo get U --token typed", wantToken: "typed"},
		{name: "both typed", token: "typed", tokenFile: file, usage: true},
		{name: "both variables", token: "e", tokenFile: file, env: map[string]string{"LARGO_TOKEN": "e", "LARGO_TOKEN_FILE": file}, usage: true},
		{name: "missing file", tokenFile: filepath.Join(dir, "missing"), usage: true},
		{name: "empty file", tokenFile: empty, usage: true},
		{name: "two lines", tokenFile: twoLines, usage: true},
	} {
		getenv := func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }
		cred, err := resolveCredential(c.token, c.tokenFile, getenv)
		if c.usage {
			if exitCode(err) != exitUsage || strings.Contains(fmt.Sprint(err), "secret") {
				t.Errorf("%s: %v; want a usage error that shows no token", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got := cred.command("largo get U"); got != c.want || cred.token != c.wantToken {
			t.Errorf("%s: %q with token %q; want %q with %q", c.name, got, cred.token, c.want, c.wantToken)
		}
	}
}

// TestRefusedToken checks what a 401 or 403 says: never that a re-run
// will not help, always how to give the token, and never the token.
func TestRefusedToken(t *testing.T) {
	for _, c := range []struct {
		cred credential
		code int
		want string
	}{
		{credential{}, 401, "the server wants a token"},
		{credential{token: "s3cret", from: "from $LARGO_TOKEN"}, 401, "refused the token from $LARGO_TOKEN"},
		{credential{token: "s3cret", from: "given with --token"}, 403, "the token given with --token may not do this"},
		{credential{}, 403, "needs a token"},
	} {
		se := &client.StatusError{Code: c.code, Status: fmt.Sprintf("%d x", c.code), Method: "GET", URL: "http://h/f"}
		tc := &transferConfig{cred: c.cred}
		err := tc.transferErr(fmt.Errorf("wrapped: %w", se), "largo get http://h/f")
		msg := err.Error()
		if exitCode(err) != exitFailed || !strings.Contains(msg, c.want) || !strings.Contains(msg, "--token") ||
			!strings.Contains(msg, "LARGO_TOKEN") || strings.Contains(msg, "s3cret") || strings.Contains(msg, "will not help") {
			t.Errorf("%d with %+v: exit %d: %q", c.code, c.cred, exitCode(err), msg)
		}
	}
	// A stop prints the resume command with the credential as given.
	tc := &transferConfig{cred: credential{token: "x", env: `LARGO_TOKEN="$LARGO_TOKEN"`}}
	err := tc.transferErr(fmt.Errorf("%w: %w", client.ErrResumable, errSignal), resumeCommand("put", *tc, 0, "f", "http://h/"))
	if exitCode(err) != exitInterrupted || !strings.HasSuffix(err.Error(), `run again: LARGO_TOKEN="$LARGO_TOKEN" largo put f http://h/`) {
		t.Errorf("interrupted: exit %d: %v", exitCode(err), err)
	}
}
