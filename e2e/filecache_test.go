//go:build e2e

package e2e

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
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
