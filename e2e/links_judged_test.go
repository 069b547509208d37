//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const linksJudgedAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/"
users = ["alice", "bob"]
allow = ["all"]

[[quota]]
path = "/q"
bytes = "1000"
`

// TestQuotaAndLocksThroughLinks: a path's quota and a WebDAV lock hold
// the folder they are on under every name that reaches it: a write
// through a link to the folder is refused as one to its own name is (507
// past the quota, 423 under another's lock), by PUT, WebDAV and the page,
// and a lock taken through the link holds the folder's own name.
func TestQuotaAndLocksThroughLinks(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"q", "cp", "lk"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "big.bin"), []byte(strings.Repeat("b", 600)), 0o644)
	os.WriteFile(filepath.Join(dir, "cp", "f.txt"), []byte("locked"), 0o644)
	for link, target := range map[string]string{"ql": "q", "cpl": "cp", "lkl": "lk"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, dir, "--access", writeAccessFile(t, linksJudgedAccess), "--webdav")
	alice := []string{"Authorization", tokenOf("alice")}
	bob := []string{"Authorization", tokenOf("bob")}
	put := func(who []string, name string, n int) (*http.Response, string) {
		return send(t, "PUT", s.URL+name, strings.NewReader(strings.Repeat("x", n)), int64(n), who...)
	}

	// The quota of /q, through /ql.
	if resp, body := put(bob, "q/a.bin", 600); resp.StatusCode != 201 {
		t.Fatalf("PUT q/a.bin: %s %s", resp.Status, body)
	}
	resp, body := put(bob, "ql/b.bin", 600)
	want507(t, "PUT through the link", resp.Status, body, "quota of /q")
	resp, body = send(t, "MOVE", s.URL+"big.bin", nil, 0, append(bob, "Destination", s.URL+"ql/m.bin")...)
	want507(t, "WebDAV MOVE through the link", resp.Status, body, "quota of /q")
	resp, body = send(t, "COPY", s.URL+"big.bin", nil, 0, append(bob, "Destination", s.URL+"ql/c.bin")...)
	want507(t, "WebDAV COPY through the link", resp.Status, body, "quota of /q")
	for _, name := range []string{"q/b.bin", "q/m.bin", "q/c.bin"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s was written past the quota", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "big.bin")); err != nil {
		t.Errorf("the refused move took the source: %v", err)
	}
	if resp, body := put(bob, "ql/small.bin", 300); resp.StatusCode != 201 {
		t.Errorf("PUT through the link within the quota: %s %s", resp.Status, body)
	}

	// alice's lock on /cp, through /cpl; hers on /lkl, on /lk.
	for _, name := range []string{"cp/", "lkl/"} {
		if resp, body := send(t, "LOCK", s.URL+name, strings.NewReader(lockBody), int64(len(lockBody)), append(alice, "Depth", "infinity", "Content-Type", "application/xml")...); resp.StatusCode != 200 {
			t.Fatalf("LOCK %s: %s %s", name, resp.Status, body)
		}
	}
	for _, c := range []struct{ method, name string }{
		{"PUT", "cpl/new.txt"}, {"PUT", "cpl/f.txt"}, {"DELETE", "cpl/f.txt"},
		{"PUT", "cp/new.txt"}, {"PUT", "lk/new.txt"}, {"PUT", "lkl/new.txt"},
	} {
		var resp *http.Response
		var body string
		if c.method == "PUT" {
			resp, body = put(bob, c.name, 5)
		} else {
			resp, body = send(t, c.method, s.URL+c.name, nil, 0, bob...)
		}
		if resp.StatusCode != http.StatusLocked {
			t.Errorf("bob's %s %s under alice's lock: %s %s; want 423", c.method, c.name, resp.Status, body)
		}
	}
	resp, body = send(t, "MOVE", s.URL+"q/a.bin", nil, 0, append(bob, "Destination", s.URL+"cpl/a.bin")...)
	if resp.StatusCode != http.StatusLocked {
		t.Errorf("bob's MOVE into the locked folder through the link: %s %s; want 423", resp.Status, body)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "cp", "f.txt")); err != nil || string(got) != "locked" {
		t.Errorf("the locked file: %q %v", got, err)
	}
}

// TestDAVCopyRefusedWritesNothing: a WebDAV COPY or MOVE of a folder to
// a destination where nothing is, refused for a reason known before it
// starts (the quota where it lands, a name the server refuses), answers
// the refusal and writes nothing, rather than the files copied before it
// met the refusal.
func TestDAVCopyRefusedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"src/1", "src/2", "src/3"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(strings.Repeat("s", 400)), 0o644)
	}
	for _, d := range []string{"q", "odd", "many", "fq"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "odd", "a.txt"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "odd", "b\u200b.txt"), []byte("b"), 0o644) // a name largo refuses to make
	os.WriteFile(filepath.Join(dir, "odd", "c.txt"), []byte("c"), 0o644)
	access := linksJudgedAccess + "\n[[quota]]\npath = \"/fq\"\nfiles = 3\n"
	s := startServer(t, dir, "--access", writeAccessFile(t, access), "--webdav")
	bob := []string{"Authorization", tokenOf("bob")}

	for _, method := range []string{"COPY", "MOVE"} {
		resp, body := send(t, method, s.URL+"src/", nil, 0, append(bob, "Destination", s.URL+"q/copy/")...)
		want507(t, method+" of a folder past the quota", resp.Status, body, "quota of /q")
		if _, err := os.Lstat(filepath.Join(dir, "q", "copy")); err == nil {
			t.Errorf("the refused %s wrote q/copy", method)
		}
	}
	// Past the quota's files: four files and their folder where one is.
	for i := range 4 {
		os.WriteFile(filepath.Join(dir, "many", fmt.Sprint(i)), []byte("m"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "fq", "one"), []byte("1"), 0o644)
	resp, body := send(t, "COPY", s.URL+"many/", nil, 0, append(bob, "Destination", s.URL+"fq/many/")...)
	want507(t, "COPY of a folder past the quota's files", resp.Status, body, "quota of /fq")
	if _, err := os.Lstat(filepath.Join(dir, "fq", "many")); err == nil {
		t.Error("the COPY refused for the quota's files wrote fq/many")
	}
	resp, body = send(t, "COPY", s.URL+"odd/", nil, 0, append(bob, "Destination", s.URL+"odd2/")...)
	if resp.StatusCode/100 != 4 {
		t.Errorf("COPY of a folder with a name largo refuses: %s %s; want a refusal", resp.Status, body)
	}
	if _, err := os.Lstat(filepath.Join(dir, "odd2")); err == nil {
		t.Error("the refused COPY wrote odd2")
	}
	if resp, body := send(t, "COPY", s.URL+"src/", nil, 0, append(bob, "Destination", s.URL+"fits/")...); resp.StatusCode != 201 {
		t.Errorf("a COPY that fits: %s %s", resp.Status, body)
	}
}
