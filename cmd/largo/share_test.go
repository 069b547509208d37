package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo"
)

// TestShareCommand: largo share makes a link on the store's record, lists
// it, extends it and revokes it; a damaged share key is an error that
// says so, not "no key".
func TestShareCommand(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "a.txt"), []byte("a"), 0o644)
	share := func(args ...string) (string, error) {
		var out, errs bytes.Buffer
		err := run(context.Background(), append([]string{"share", "--dir", dir, "--url", "http://127.0.0.1:9"}, args...), quietEnv(&out, &errs))
		return out.String() + errs.String(), err
	}
	link, err := share("/docs")
	if err != nil || !strings.HasPrefix(link, "http://127.0.0.1:9/_largo/s/v2.") {
		t.Fatalf("largo share /docs: %q, %v", link, err)
	}
	id := strings.Split(strings.TrimPrefix(strings.TrimSpace(link), "http://127.0.0.1:9/_largo/s/"), ".")[1]
	if list, err := share("--list"); err != nil || !strings.Contains(list, id) || !strings.Contains(list, "(operator)") {
		t.Errorf("--list: %q, %v", list, err)
	}
	if out, err := share("--extend", id, "--expires", "48h"); err != nil || !strings.Contains(out, "now expires") {
		t.Errorf("--extend: %q, %v", out, err)
	}
	if out, err := share("--revoke", id); err != nil || !strings.Contains(out, "revoked") {
		t.Errorf("--revoke: %q, %v", out, err)
	}
	if list, _ := share("--list"); strings.Contains(list, id) {
		t.Errorf("a revoked link still listed: %q", list)
	}
	if _, err := share("--revoke", "nope"); err == nil {
		t.Error("--revoke of no link: no error")
	}
	if _, err := share("/docs", "--max-upload", "1MiB"); err == nil {
		t.Error("--max-upload without --write: no error")
	}
	os.WriteFile(filepath.Join(dir, ".largo", "share.key"), []byte("short"), 0o600)
	if out, err := share("/docs"); err == nil || !strings.Contains(err.Error()+out, "damaged") {
		t.Errorf("a damaged share key: %q, %v", out, err)
	}
}

// TestShareMatchesServer: without --url, a link starts with the address
// the server serving the folder recorded (and, with none recorded, with
// the default and a warning); PATH may be a file of this machine inside
// the served folder, found from anywhere by its state folder; --expires
// takes days; --list shows every limit; a link --as a user who may not
// use it is made with a warning.
func TestShareMatchesServer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.MkdirAll(filepath.Join(dir, "inbox"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "a.txt"), []byte("a"), 0o644)
	access := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(access, []byte(`
[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/docs"
users = ["bob"]
allow = ["read", "list"]
`), 0o600)
	share := func(env map[string]string, args ...string) (string, string, error) {
		var out, errs bytes.Buffer
		e := quietEnv(&out, &errs)
		e.getenv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
		err := run(ctx, append([]string{"share"}, args...), e)
		return out.String(), errs.String(), err
	}
	out, errs, err := share(nil, "--dir", dir, "/docs")
	if err != nil || !strings.HasPrefix(out, defaultShareBase+"/_largo/s/") || !strings.Contains(errs, "warning") || !strings.Contains(errs, "--url") {
		t.Fatalf("no server recorded: %q %q %v", out, errs, err)
	}
	st, _, err := openStore(ctx, quietEnv(io.Discard, io.Discard), &serveConfig{dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	state := st.(largo.StateKeeper).State()
	if err := recordAddress(ctx, state, "http://127.0.0.1:41234/"); err != nil {
		t.Fatal(err)
	}
	// A file path of this machine, from another folder, with no --dir.
	out, errs, err = share(nil, filepath.Join(dir, "docs", "a.txt"), "--expires", "7d")
	if err != nil || !strings.HasPrefix(out, "http://127.0.0.1:41234/_largo/s/") || strings.HasSuffix(strings.TrimSpace(out), "/") || errs != "" {
		t.Fatalf("a file path: %q %q %v", out, errs, err)
	}
	if out, _, err := share(nil, "--dir", dir, "/docs/missing.txt"); err == nil || exitCode(err) != exitUsage {
		t.Errorf("a missing PATH: %q %v", out, err)
	}
	if _, errs, err := share(map[string]string{"LARGO_LINK_PASSWORD": "a long link password"}, "--dir", dir, "--access", access, "/inbox", "--write", "--password", "--max-rate", "5MB", "--max-upload", "1GiB", "--file-ttl", "7d", "--as", "bob", "--expires", "2w"); err != nil || !strings.Contains(errs, "warning: the access rules do not let bob write into /inbox") {
		t.Errorf("a drop box bob may not write into: %q %v", errs, err)
	}
	if _, errs, err := share(nil, "--dir", dir, "--access", access, "/docs", "--as", "bob"); err != nil || errs != "" {
		t.Errorf("a link bob may use: %q %v", errs, err)
	}
	list, _, err := share(nil, "--dir", dir, "--list")
	for _, want := range []string{"password: yes", "max rate 4.8 MiB/s", "max upload 1 GiB", "files expire after 7d", "http://127.0.0.1:41234/_largo/s/"} {
		if err != nil || !strings.Contains(list, want) {
			t.Errorf("--list lacks %q: %q %v", want, list, err)
		}
	}
	// Its process gone, the record is no longer believed.
	forgetAddress(ctx, state)
	host, _ := thisProcess()
	addresses(state).Put(ctx, addressKey(host, 1<<22+7), addressRecord{URL: "http://127.0.0.1:5/", Host: host, PID: 1<<22 + 7, Started: time.Now()})
	if out, errs, _ := share(nil, "--dir", dir, "/docs"); !strings.HasPrefix(out, defaultShareBase) || !strings.Contains(errs, "no longer runs") {
		t.Errorf("a gone server's record: %q %q", out, errs)
	}
}
