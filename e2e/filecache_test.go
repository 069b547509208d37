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

	"largo/internal/poll"
)

// getBody GETs url and returns its status, body and ETag.
func getBody(t testing.TB, url string) (int, string, string) {
	t.Helper()
	resp := get(t, url)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b), resp.Header.Get("ETag")
}

// replaceBehind replaces the stored file name with content behind the
// server's back: a new file renamed over it in the folder, a new object
// put in the bucket.
func (g *target) replaceBehind(t testing.TB, name, content string) {
	t.Helper()
	if g.srv != nil {
		g.srv.Put(t, name, []byte(content))
		return
	}
	p := filepath.Join(g.dir, filepath.FromSlash(name))
	if err := os.WriteFile(p+".tmp", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		t.Fatal(err)
	}
}

// TestFileCacheWritesServedAtOnce: with an open-file cache that looks at
// a file it keeps only once an hour, a file written, moved or removed
// through largo is served as it is now by the very next request, on a
// folder and on a bucket, whatever protocol made the change.
func TestFileCacheWritesServedAtOnce(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		g.seed(t, "f.txt", "old")
		g.seed(t, "other.txt", "other")
		s := g.serve(t, "--webdav", "--file-cache-window", "1h")
		for range 3 { // seen, read in, then kept
			if code, b, _ := getBody(t, s.URL+"f.txt"); code != 200 || b != "old" {
				t.Fatalf("GET: %d %q", code, b)
			}
			getBody(t, s.URL+"other.txt")
		}
		// Behind the server's back, within the hour: on a bucket the
		// version kept, which shows the cache is in the way; on a folder
		// the new one, told by inotify
		// (TestFileCacheReplacedBehindWithinWindow).
		g.replaceBehind(t, "other.txt", "changed behind")
		if _, b, _ := getBody(t, s.URL+"other.txt"); g.kind != "disk" && b != "other" {
			t.Fatalf("a change behind the server was seen at once (%q): is the cache on?", b)
		}

		for i, content := range []string{"new", "newer, longer"} {
			resp, _ := send(t, "PUT", s.URL+"f.txt", strings.NewReader(content), int64(len(content)), bearer...)
			if resp.StatusCode/100 != 2 {
				t.Fatalf("PUT %d: %d", i, resp.StatusCode)
			}
			if code, b, etag := getBody(t, s.URL+"f.txt"); code != 200 || b != content || etag != resp.Header.Get("ETag") {
				t.Fatalf("after PUT %d: %d %q, ETag %s; want %q, ETag %s", i, code, b, etag, content, resp.Header.Get("ETag"))
			}
		}
		// A move over a kept file: the moved bytes at once.
		resp, _ := send(t, "MOVE", s.URL+"other.txt", nil, 0, append([]string{"Destination", s.URL + "f.txt", "Overwrite", "T"}, bearer...)...)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("MOVE: %d", resp.StatusCode)
		}
		if code, b, _ := getBody(t, s.URL+"f.txt"); code != 200 || b != "changed behind" {
			t.Fatalf("after MOVE over it: %d %q", code, b)
		}
		if code, _, _ := getBody(t, s.URL+"other.txt"); code != http.StatusNotFound {
			t.Fatalf("the moved file's old name: %d", code)
		}
		resp, _ = send(t, "DELETE", s.URL+"f.txt", nil, 0, bearer...)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE: %d", resp.StatusCode)
		}
		if code, b, _ := getBody(t, s.URL+"f.txt"); code != http.StatusNotFound {
			t.Fatalf("after DELETE: %d %q", code, b)
		}
	})
}

// TestFileCacheReplacedBehindWithinWindow: a file replaced behind the
// server's back (another program, another instance on the bucket) is
// served new within the open-file cache's window on a bucket (a second;
// the test allows the load of a shared machine on top), and at once on a
// folder, whatever the window: inotify tells of it (here with a window
// of an hour, so that no stat can).
func TestFileCacheReplacedBehindWithinWindow(t *testing.T) {
	const window = time.Second
	forEachTarget(t, func(t *testing.T, g *target) {
		g.seed(t, "f.txt", "old")
		g.seed(t, "d/e/g.txt", "old")
		var s *server
		if g.kind == "disk" {
			s = g.serve(t, "--file-cache-window", "1h")
		} else {
			s = g.serve(t)
		}
		for range 3 {
			if _, b, _ := getBody(t, s.URL+"f.txt"); b != "old" {
				t.Fatalf("GET: %q", b)
			}
		}
		g.replaceBehind(t, "f.txt", "new, behind the server")
		replaced := time.Now()
		if g.kind == "disk" {
			if _, b, _ := getBody(t, s.URL+"f.txt"); b != "new, behind the server" {
				t.Fatalf("the first GET after a replacement behind the server on a folder: %q; want the new bytes at once", b)
			}
			// A folder on the way swapped for another one.
			for range 3 {
				getBody(t, s.URL+"d/e/g.txt")
			}
			if err := os.Rename(filepath.Join(g.dir, "d"), filepath.Join(g.dir, "d.old")); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(g.dir, "d", "e"), 0o755); err != nil {
				t.Fatal(err)
			}
			g.replaceBehind(t, "d/e/g.txt", "new folder")
			if _, b, _ := getBody(t, s.URL+"d/e/g.txt"); b != "new folder" {
				t.Fatalf("the first GET after its folder was swapped behind the server: %q; want the new bytes at once", b)
			}
			return
		}
		var seen time.Duration
		ok := poll.Until(window+3*time.Second, 20*time.Millisecond, func() bool {
			_, b, _ := getBody(t, s.URL+"f.txt")
			seen = time.Since(replaced)
			return b == "new, behind the server"
		})
		if !ok {
			t.Fatalf("the replaced file still served old %s after its replacement; the window is %s", seen, window)
		}
		t.Logf("served new %s after the replacement", seen.Round(time.Millisecond))
		// And from then on, kept again.
		if _, b, _ := getBody(t, s.URL+"f.txt"); b != "new, behind the server" {
			t.Fatalf("then: %q", b)
		}
	})
}

// TestFileCacheLane: in the real server, a kept file's GETs on a plain
// connection are answered in the connection's lane, pipelined or not,
// each with its access line; a request the lane does not take (a PUT
// with a body) is net/http's with everything after it, and answered as
// ever; and a stop ends a connection waiting in the lane at once, not
// after net/http's five seconds for a new connection.
func TestFileCacheLane(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.txt"), []byte("kept bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir, "--upload", "--token", testToken, "--drain-timeout", "60s")
	for range 2 { // seen, then kept
		if code, b, _ := getBody(t, s.URL+"k.txt"); code != 200 || b != "kept bytes" {
			t.Fatalf("GET: %d %q", code, b)
		}
	}
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReader(c)
	get := "GET /k.txt HTTP/1.1\r\nHost: " + s.Addr + "\r\n\r\n"
	put := "PUT /new.txt HTTP/1.1\r\nHost: " + s.Addr + "\r\nAuthorization: Bearer " + testToken + "\r\nContent-Length: 3\r\n\r\nnew"
	io.WriteString(c, get+get+"HEAD /k.txt HTTP/1.1\r\nHost: "+s.Addr+"\r\n\r\n"+put+get)
	for i, want := range []struct {
		method string
		status int
		body   string
	}{{"GET", 200, "kept bytes"}, {"GET", 200, "kept bytes"}, {"HEAD", 200, ""}, {"PUT", 201, ""}, {"GET", 200, "kept bytes"}} {
		resp, err := http.ReadResponse(br, &http.Request{Method: want.method})
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != want.status || want.method != "PUT" && string(b) != want.body {
			t.Fatalf("answer %d (%s): %d %q", i, want.method, resp.StatusCode, b)
		}
		if want.method != "PUT" && (resp.Header.Get("Etag") == "" || resp.Header.Get("Content-Length") != "10" || resp.Header.Get("X-Content-Type-Options") != "nosniff") {
			t.Fatalf("answer %d: fields %v", i, resp.Header)
		}
	}
	if got, err := os.ReadFile(filepath.Join(dir, "new.txt")); err != nil || string(got) != "new" {
		t.Fatalf("the PUT after the lane: %q %v", got, err)
	}
	if !waitFor(10*time.Second, func() bool { return strings.Count(s.stderr.String(), "path=/k.txt status=200") >= 6 }) {
		t.Fatalf("access lines of /k.txt: %d; want 6", strings.Count(s.stderr.String(), "path=/k.txt status=200"))
	}

	// A connection that took the lane, waiting for its next request.
	idle, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.SetDeadline(time.Now().Add(20 * time.Second))
	ibr := bufio.NewReader(idle)
	io.WriteString(idle, get)
	if resp, err := http.ReadResponse(ibr, nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the idle connection's GET: %v", err)
	} else {
		io.ReadAll(resp.Body)
	}
	c.Close()
	start := time.Now()
	s.signal(syscall.SIGTERM)
	if code := s.wait(15 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("the stop took %s with a connection waiting in the lane", took)
	}
}
