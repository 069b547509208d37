package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"largo/auth"
)

// accessExample is the first access file of docs/access.md, with a real
// password hash and without its [share] table (whose key file is the
// reader's): the example the docs give people to copy.
func accessExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../docs/access.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```toml\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/access.md has no access file")
	}
	text := string(m[1])
	if i := strings.Index(text, "[share]"); i >= 0 {
		text = text[:i]
	}
	text = regexp.MustCompile(`"\$argon2id\$[^"]*"`).ReplaceAllString(text, `"`+strings.ReplaceAll(auth.HashPassword("a password"), `$`, `$$`)+`"`)
	return text
}

// TestAccessCheck: largo access check prints who may do what at each
// rule's path, and warns of a path whose rules name some users only
// while a rule above still gives it to everyone; the docs' example is
// safe (it keeps /backups to its bot) and says so.
func TestAccessCheck(t *testing.T) {
	check := func(text string) string {
		t.Helper()
		file := filepath.Join(t.TempDir(), "access.toml")
		os.WriteFile(file, []byte(text), 0o600)
		var out, errs bytes.Buffer
		if err := run(context.Background(), []string{"access", "check", file}, quietEnv(&out, &errs)); err != nil {
			t.Fatalf("%v: %s", err, errs.String())
		}
		return out.String()
	}
	open := check(`
[[user]]
name = "bot"
tokens = ["a-long-random-token"]

[[user]]
name = "ann"
tokens = ["another-long-token"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/backups"
users = ["bot"]
allow = ["all"]

[[rule]]
path = "/drop"
users = ["anonymous"]
allow = ["write"]
`)
	for _, want := range []string{
		"/backups  anyone      anyone      bot        bot",
		// anonymous's own rule at /drop takes the place of "*"'s.
		"/drop     every user  every user  anonymous  -",
		`warning: /backups: its rules name bot only, yet anyone they do not name may read and list it, by the rule for "*" on /`,
	} {
		if !strings.Contains(open, want) {
			t.Errorf("lacks %q:\n%s", want, open)
		}
	}
	if strings.Contains(open, "warning: /drop") {
		t.Errorf("a path whose rules name anonymous is no surprise:\n%s", open)
	}

	docs := check(accessExample(t))
	if strings.Contains(docs, "warning") || !regexp.MustCompile(`/backups\s+backup-bot\s+backup-bot\s+backup-bot`).MatchString(docs) || !regexp.MustCompile(`/private\s+alice\s+alice`).MatchString(docs) {
		t.Errorf("the docs' example:\n%s", docs)
	}
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"access", "check", filepath.Join(t.TempDir(), "missing.toml")}, quietEnv(&out, &errs)); exitCode(err) != exitFailed {
		t.Errorf("a missing file: %v", err)
	}
}
