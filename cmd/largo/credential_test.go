package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/client"
)

func TestResolveToken(t *testing.T) {
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
		cred, err := resolveToken(c.token, c.tokenFile, getenv)
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
		if got := cred.command("largo get U"); got != c.want || cred.value != c.wantToken {
			t.Errorf("%s: %q with token %q; want %q with %q", c.name, got, cred.value, c.want, c.wantToken)
		}
	}
}

// TestResolvePasswords: a user's password and a share link's come from a
// file, a variable or the URL, and the command printed to resume names
// where, never the password itself; a user with no password and no
// terminal to ask on is a usage error.
func TestResolvePasswords(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	os.WriteFile(file, []byte("file-secret\n"), 0o600)
	const (
		plain = "http://h/f"
		link  = "http://h/_largo/s/TOKEN/f"
	)
	for _, c := range []struct {
		name     string
		flags    credentialFlags
		url      string // with credentials, as typed
		env      map[string]string
		kind     credKind
		user     string
		password string
		want     string // the resume command of "largo get CLEAN"
		usage    bool
	}{
		{name: "user, file", flags: credentialFlags{user: "ann", passwordFile: file}, url: plain, kind: kindPassword, user: "ann", password: "file-secret", want: "largo get CLEAN --user ann --password-file " + file},
		{name: "user, variable", flags: credentialFlags{user: "ann"}, url: plain, env: map[string]string{"LARGO_PASSWORD": "env-secret"}, kind: kindPassword, user: "ann", password: "env-secret", want: `LARGO_PASSWORD="$LARGO_PASSWORD" largo get CLEAN --user ann`},
		{name: "user and password in the URL", url: "http://ann:url-secret@h/f", kind: kindPassword, user: "ann", password: "url-secret", want: "largo get CLEAN --user ann"},
		{name: "user, no password, no terminal", flags: credentialFlags{user: "ann"}, url: plain, usage: true},
		{name: "password file without a user", flags: credentialFlags{passwordFile: file}, url: plain, usage: true},
		{name: "user and token", flags: credentialFlags{user: "ann", token: "t"}, url: plain, env: map[string]string{"LARGO_PASSWORD": "x"}, usage: true},
		{name: "link, file", flags: credentialFlags{linkPasswordFile: file}, url: link, kind: kindLink, password: "file-secret", want: "largo get CLEAN --link-password-file " + file},
		{name: "link, variable", url: link, env: map[string]string{"LARGO_LINK_PASSWORD": "env-secret"}, kind: kindLink, password: "env-secret", want: `LARGO_LINK_PASSWORD="$LARGO_LINK_PASSWORD" largo get CLEAN`},
		{name: "link, in the URL", url: "http://x:url-secret@h/_largo/s/TOKEN/f", kind: kindLink, password: "url-secret", want: "largo get CLEAN"},
		{name: "link, none yet", url: link, kind: kindNone, want: "largo get CLEAN"},
		{name: "link with a user", flags: credentialFlags{user: "ann"}, url: link, usage: true},
		{name: "link password to no link", flags: credentialFlags{linkPasswordFile: file}, url: plain, usage: true},
	} {
		e := &env{stderr: io.Discard, getenv: func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }}
		clean, inURL, err := urlCredentials(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if u, _ := url.Parse(clean); u.User != nil || strings.Contains(clean, "secret") {
			t.Errorf("%s: the URL keeps its credentials: %s", c.name, clean)
		}
		cred, err := resolveCredential(c.flags, clean, inURL, e)
		if c.usage {
			if exitCode(err) != exitUsage || strings.Contains(fmt.Sprint(err), "secret") {
				t.Errorf("%s: %v; want a usage error that shows no password", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		got := cred.command("largo get CLEAN")
		if cred.kind != c.kind || cred.user != c.user || cred.value != c.password || got != c.want {
			t.Errorf("%s: kind %d user %q password %q, %q; want kind %d user %q password %q, %q", c.name, cred.kind, cred.user, cred.value, got, c.kind, c.user, c.password, c.want)
		}
		var cl client.Client
		cred.apply(&cl)
		if c.kind != kindNone && cl.Password+cl.LinkPassword != c.password {
			t.Errorf("%s: the client sends the password %q", c.name, cl.Password+cl.LinkPassword)
		}
	}
}

// TestRefusedAdvice checks what a 401 or 403 says: how to give the
// credential that decides it, never the secret, and for a refusal that
// is no credential's (a pre-upload hook's, a drop box's) the server's
// word alone.
func TestRefusedAdvice(t *testing.T) {
	token := credential{kind: kindToken, secret: secret{value: "s3cret", from: "given with --token"}}
	envToken := credential{kind: kindToken, secret: secret{value: "s3cret", from: "from $LARGO_TOKEN"}}
	user := credential{kind: kindPassword, user: "ann", secret: secret{value: "s3cret", from: "from $LARGO_PASSWORD"}}
	link := credential{kind: kindLink, secret: secret{value: "s3cret", from: "read from pw.txt"}}
	for _, c := range []struct {
		cred   credential
		link   bool
		code   int
		reason string
		want   []string
		not    []string
	}{
		{credential{}, false, 401, "unauthorized", []string{"wants a sign-in", "--user", "LARGO_TOKEN"}, nil},
		{envToken, false, 401, "", []string{"refused the token from $LARGO_TOKEN", "--token"}, nil},
		{user, false, 401, "", []string{"refused the password of ann from $LARGO_PASSWORD", "--password-file"}, []string{"--token"}},
		{token, false, 403, reasonRule, []string{"access rules do not let the token given with --token do this"}, nil},
		{user, false, 403, reasonRule, []string{"access rules do not let ann do this"}, []string{"--token"}},
		{credential{}, false, 403, reasonRule, []string{"without signing in", "--user"}, nil},
		{token, false, 403, "no .exe files here", []string{"403 x: no .exe files here"}, []string{"token", "--user"}},
		{user, false, 403, "forbidden: a drop-box link only uploads new files into its folder", []string{"drop-box"}, []string{"--user", "ann"}},
		{credential{}, true, 401, "this share link needs its password: send it", []string{"needs its password", "--link-password-file", "LARGO_LINK_PASSWORD"}, []string{"--token"}},
		{link, true, 403, reasonLinkPass, []string{"refused the link's password read from pw.txt", "--link-password-file"}, nil},
	} {
		se := &client.StatusError{Code: c.code, Status: fmt.Sprintf("%d x", c.code), Reason: c.reason, Method: "PUT", URL: "http://h/f"}
		tc := &transferConfig{cred: c.cred, link: c.link}
		err := tc.transferErr(fmt.Errorf("wrapped: %w", se), "largo put f http://h/f")
		msg := err.Error()
		if exitCode(err) != exitFailed || strings.Contains(msg, "s3cret") {
			t.Errorf("%d %q with %+v: exit %d: %q", c.code, c.reason, c.cred, exitCode(err), msg)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%d %q with %+v: %q lacks %q", c.code, c.reason, c.cred.kind, msg, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(msg, n) {
				t.Errorf("%d %q with %+v: %q has %q", c.code, c.reason, c.cred.kind, msg, n)
			}
		}
	}
	// A stop prints the resume command with the credential as given.
	tc := &transferConfig{cred: credential{kind: kindToken, secret: secret{value: "x", env: `LARGO_TOKEN="$LARGO_TOKEN"`}}}
	err := tc.transferErr(fmt.Errorf("%w: %w", client.ErrResumable, errSignal), resumeCommand("put", *tc, 0, "f", "http://h/"))
	if exitCode(err) != exitInterrupted || !strings.HasSuffix(err.Error(), `run again: LARGO_TOKEN="$LARGO_TOKEN" largo put f http://h/`) {
		t.Errorf("interrupted: exit %d: %v", exitCode(err), err)
	}
}
