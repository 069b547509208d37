//go:build e2e

package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReplayJudgedAgain: the answer of a kept file that the lane sends
// again to the same plain request (package internal/quick) follows every
// change the handler's own way sees, at once, on a connection that has
// been answered from it: the file replaced on disk, a link retargeted
// inside the folder and across it, the access file reloaded, the file
// removed. Each plain request is followed by the same question with one
// more field, which the handler answers itself: both must agree.
func TestReplayJudgedAgain(t *testing.T) {
	dir := t.TempDir()
	pub := filepath.Join(dir, "pub")
	for name, body := range map[string]string{"pub/a.txt": "alpha", "pub/b.txt": "bravo", "private/s.txt": "secret"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(pub, "l.txt")); err != nil {
		t.Fatal(err)
	}
	rules := "[[rule]]\npath = \"/\"\nusers = [\"*\"]\nallow = [\"read\", \"list\"]\n"
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, "--access", access)

	// A connection stays in the lane while each request it sends is one
	// the lane takes (a kept file's): a connection to be answered again
	// is made once the file is kept, and asked twice (answered, then
	// answered again), before the change.
	type conn struct {
		net.Conn
		br *bufio.Reader
	}
	dial := func() *conn {
		t.Helper()
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(60 * time.Second))
		return &conn{c, bufio.NewReader(c)}
	}
	ask := func(c *conn, path, extra string) (int, string) {
		t.Helper()
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+s.Addr+"\r\nUser-Agent: replay-test\r\n"+extra+"\r\n")
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp.StatusCode, string(b)
	}
	other := dial() // the handler's way: one more field
	// expect asks c for path plainly and other with one more field, and
	// wants both answers.
	expect := func(c *conn, step, path string, status int, body string) {
		t.Helper()
		for _, a := range []struct {
			c     *conn
			extra string
		}{{c, ""}, {other, "X-Not-Plain: 1\r\n"}} {
			if code, b := ask(a.c, path, a.extra); code != status || status == 200 && b != body {
				t.Fatalf("%s: GET %s (%q): %d %q; want %d %q", step, path, a.extra, code, b, status, body)
			}
		}
	}
	// answered returns a connection whose next plain GET of path is
	// answered again, if the lane still may.
	answered := func(path, body string) *conn {
		t.Helper()
		for range 2 { // seen, kept
			expect(dial(), "warming", path, 200, body)
		}
		c := dial()
		for range 2 { // answered, and kept to be answered again; answered again
			expect(c, "answered again", path, 200, body)
		}
		return c
	}

	replace := func(name, body string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.WriteFile(p+".new", []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
	}
	c := answered("/pub/a.txt", "alpha")
	replace("pub/a.txt", "alpha, replaced")
	expect(c, "replaced on disk", "/pub/a.txt", 200, "alpha, replaced")

	relink := func(target string) {
		tmp := filepath.Join(pub, "l.tmp")
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(pub, "l.txt")); err != nil {
			t.Fatal(err)
		}
	}
	c = answered("/pub/l.txt", "alpha, replaced")
	relink("b.txt")
	expect(c, "the link retargeted", "/pub/l.txt", 200, "bravo")
	c = answered("/pub/l.txt", "bravo")
	relink("../private/s.txt") // across the tree: not followed with an access file
	expect(c, "the link across the tree", "/pub/l.txt", 404, "")

	// The rules reloaded: nobody may read any more.
	c = answered("/pub/b.txt", "bravo")
	if err := os.WriteFile(access, []byte(strings.Replace(rules, `"read", "list"`, `"list"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.signal(syscall.SIGHUP)
	if !waitFor(10*time.Second, func() bool { code, _ := ask(dial(), "/pub/b.txt", "X-Not-Plain: 1\r\n"); return code != 200 }) {
		t.Fatal("the reloaded rules are not in force")
	}
	code, _ := ask(dial(), "/pub/b.txt", "X-Not-Plain: 1\r\n")
	expect(c, "after the reload", "/pub/b.txt", code, "")

	// Readable again, then removed.
	if err := os.WriteFile(access, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	s.signal(syscall.SIGHUP)
	if !waitFor(10*time.Second, func() bool { code, _ := ask(dial(), "/pub/b.txt", "X-Not-Plain: 1\r\n"); return code == 200 }) {
		t.Fatal("the rules reloaded again are not in force")
	}
	c = answered("/pub/b.txt", "bravo")
	if err := os.Remove(filepath.Join(pub, "b.txt")); err != nil {
		t.Fatal(err)
	}
	expect(c, "removed", "/pub/b.txt", 404, "")
}
