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

// replayProbe asks a server for kept files over raw connections, plainly
// (a question the lane answers again once it answered it, package
// internal/quick) and with one more field (always the handler's).
type replayProbe struct {
	t     *testing.T
	s     *server
	other *probeConn
}

type probeConn struct {
	net.Conn
	br *bufio.Reader
}

func newReplayProbe(t *testing.T, s *server) *replayProbe {
	p := &replayProbe{t: t, s: s}
	p.other = p.dial()
	return p
}

func (p *replayProbe) dial() *probeConn {
	p.t.Helper()
	c, err := net.Dial("tcp", p.s.Addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	return &probeConn{c, bufio.NewReader(c)}
}

// ask sends a GET of path on c, with the extra fields, and returns the
// answer's status and body.
func (p *replayProbe) ask(c *probeConn, path, extra string) (int, string) {
	p.t.Helper()
	io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+p.s.Addr+"\r\nUser-Agent: replay-test\r\n"+extra+"\r\n")
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// handlers asks for path with one more field on a new connection: the
// handler's answer.
func (p *replayProbe) handlers(path string) int {
	code, _ := p.ask(p.dial(), path, "X-Not-Plain: 1\r\n")
	return code
}

// expect asks c for path plainly and the handler with one more field,
// and wants both answers.
func (p *replayProbe) expect(c *probeConn, step, path string, status int, body string) {
	p.t.Helper()
	for _, a := range []struct {
		c     *probeConn
		extra string
	}{{c, ""}, {p.other, "X-Not-Plain: 1\r\n"}} {
		if code, b := p.ask(a.c, path, a.extra); code != status || status == 200 && b != body {
			p.t.Fatalf("%s: GET %s (%q): %d %q; want %d %q", step, path, a.extra, code, b, status, body)
		}
	}
}

// answered returns a connection whose next plain GET of path the lane
// answers again, if it still may. A connection stays in the lane while
// each request it sends is one the lane takes (a kept file's), so it is
// made once the file is kept.
func (p *replayProbe) answered(path, body string) *probeConn {
	p.t.Helper()
	for range 2 { // seen, kept
		p.expect(p.dial(), "warming", path, 200, body)
	}
	c := p.dial()
	for range 2 { // answered and kept, answered again
		p.expect(c, "answered again", path, 200, body)
	}
	return c
}

// replaceFile replaces name under dir with body, by a rename.
func replaceFile(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.WriteFile(p+".new", []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
}

// TestReplayJudgedAgain: the answer of a kept file that the lane sends
// again to the same plain request follows every change the handler's
// own way sees, at once, on a connection that was answered from it: the
// file replaced on disk, a link retargeted inside the folder and across
// it, the access file reloaded, the file removed, a file written through
// largo.
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
	p := newReplayProbe(t, s)

	c := p.answered("/pub/a.txt", "alpha")
	replaceFile(t, dir, "pub/a.txt", "alpha, replaced")
	p.expect(c, "replaced on disk", "/pub/a.txt", 200, "alpha, replaced")

	relink := func(target string) {
		tmp := filepath.Join(pub, "l.tmp")
		if err := os.Symlink(target, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(pub, "l.txt")); err != nil {
			t.Fatal(err)
		}
	}
	c = p.answered("/pub/l.txt", "alpha, replaced")
	relink("b.txt")
	p.expect(c, "the link retargeted", "/pub/l.txt", 200, "bravo")
	c = p.answered("/pub/l.txt", "bravo")
	relink("../private/s.txt") // across the tree: not followed with an access file
	p.expect(c, "the link across the tree", "/pub/l.txt", 404, "")

	// The rules reloaded: nobody may read any more.
	c = p.answered("/pub/b.txt", "bravo")
	if err := os.WriteFile(access, []byte(strings.Replace(rules, `"read", "list"`, `"list"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	s.signal(syscall.SIGHUP)
	if !waitFor(10*time.Second, func() bool { return p.handlers("/pub/b.txt") != 200 }) {
		t.Fatal("the reloaded rules are not in force")
	}
	p.expect(c, "after the reload", "/pub/b.txt", p.handlers("/pub/b.txt"), "")

	// Readable again, then removed.
	if err := os.WriteFile(access, []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	s.signal(syscall.SIGHUP)
	if !waitFor(10*time.Second, func() bool { return p.handlers("/pub/b.txt") == 200 }) {
		t.Fatal("the rules reloaded again are not in force")
	}
	c = p.answered("/pub/b.txt", "bravo")
	if err := os.Remove(filepath.Join(pub, "b.txt")); err != nil {
		t.Fatal(err)
	}
	p.expect(c, "removed", "/pub/b.txt", 404, "")

	// Written through largo: at once, without a look at the disk.
	wdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(wdir, "w.txt"), []byte("written once"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws := startServer(t, wdir, "--upload", "--token", testToken, "--file-cache-window", "1h")
	wp := newReplayProbe(t, ws)
	c = wp.answered("/w.txt", "written once")
	if resp, _ := send(t, "PUT", ws.URL+"w.txt", strings.NewReader("written twice"), 13, "Authorization", "Bearer "+testToken); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	wp.expect(c, "written through largo", "/w.txt", 200, "written twice")
}
