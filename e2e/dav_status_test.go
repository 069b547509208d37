//go:build e2e

package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDAVOptions: what OPTIONS announces is true. Read-only, DAV class
// 1 alone and no write method in Allow, and each of them refused with
// 405; with writes, class 2 and every method of Allow answered (none 405),
// a LOCK among them.
func TestDAVOptions(t *testing.T) {
	all := []string{"GET", "HEAD", "OPTIONS", "PUT", "POST", "DELETE", "PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK"}
	for _, tc := range []struct {
		mode  string
		args  []string
		class string
	}{
		{"read-only", []string{"--webdav"}, "1"},
		{"writes", []string{"--webdav", "--upload", "--token", testToken}, "1, 2"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
			s := startServer(t, dir, tc.args...)
			resp, _ := send(t, "OPTIONS", s.URL+"a.txt", nil, 0, bearer...)
			if got := resp.Header.Get("DAV"); got != tc.class {
				t.Errorf("DAV: %q; want %q", got, tc.class)
			}
			var allow []string
			for m := range strings.SplitSeq(resp.Header.Get("Allow"), ",") {
				allow = append(allow, strings.TrimSpace(m))
			}
			for _, m := range all {
				hdr := append([]string{"Destination", "/b-" + strings.ToLower(m) + ".txt", "Depth", "0"}, bearer...)
				if m == "UNLOCK" {
					hdr = append(hdr, "Lock-Token", "<opaquelocktoken:00000000-0000-4000-8000-000000000000/_a.txt>")
				}
				var body *strings.Reader
				n := int64(0)
				if m == "LOCK" {
					b := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`
					body, n = strings.NewReader(b), int64(len(b))
				}
				target := s.URL + "a.txt"
				if m == "MKCOL" || m == "POST" {
					target = s.URL + "newdir"
				}
				var r *http.Response
				if body != nil {
					r, _ = send(t, m, target, body, n, hdr...)
				} else {
					r, _ = send(t, m, target, nil, 0, hdr...)
				}
				announced := slices.Contains(allow, m)
				switch {
				case announced && r.StatusCode == 405:
					t.Errorf("%s: Allow announces it, the answer is 405", m)
				case !announced && r.StatusCode != 405:
					t.Errorf("%s: Allow (%v) leaves it out, the answer is %d; want 405", m, allow, r.StatusCode)
				case m == "LOCK" && announced && r.StatusCode != 200 && r.StatusCode != 201:
					t.Errorf("LOCK with class %s: %d; want 200 or 201", tc.class, r.StatusCode)
				}
			}
		})
	}
}

// TestDAVStatuses: bad changes through WebDAV get the status a PUT would
// get, or the one RFC 4918 names, with a one-line reason, and leave
// nothing behind, on a folder and on a bucket.
func TestDAVStatuses(t *testing.T) { forEachTarget(t, davStatuses) }

func davStatuses(t *testing.T, g *target) {
	dir := g.dir
	g.seed(t, "a.txt", "a")
	g.seed(t, "sub/big.bin", strings.Repeat("x", 4096))
	g.seed(t, "big.bin", strings.Repeat("x", 4096))
	s := g.serve(t, "--webdav", "--max-upload", "1KiB")
	var full *server // a bucket has no free space to check
	if g.srv == nil {
		full = g.serve(t, "--webdav", "--reserve", "1000PiB")
	}
	lock := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`
	for _, tc := range []struct {
		what         string
		s            *server
		method, path string
		body         string
		hdr          []string
		code         int
		reason       string
		absent       string
	}{
		{"COPY past --max-upload", s, "COPY", "big.bin", "", []string{"Destination", "/copy.bin"}, 413, "too large", "copy.bin"},
		{"COPY of a folder past --max-upload", s, "COPY", "sub", "", []string{"Destination", "/sub2"}, 413, "too large", "sub2/big.bin"},
		{"COPY with no space left", full, "COPY", "big.bin", "", []string{"Destination", "/copy.bin"}, 507, "insufficient storage", "copy.bin"},
		{"COPY of a missing file with no space left", full, "COPY", "gone.txt", "", []string{"Destination", "/copy.bin"}, 404, "not found", "copy.bin"},
		{"COPY past --max-upload onto a file", s, "COPY", "big.bin", "", []string{"Destination", "/a.txt"}, 413, "too large", ""},
		{"LOCK in a missing folder", s, "LOCK", "missing/new.txt", lock, nil, 409, "folder does not exist", "missing"},
		{"MOVE into a missing folder", s, "MOVE", "a.txt", "", []string{"Destination", "/missing/a.txt"}, 409, "folder does not exist", "missing"},
		{"COPY into a missing folder", s, "COPY", "a.txt", "", []string{"Destination", "/missing/a.txt"}, 409, "", "missing"},
		{"MOVE of a missing file", s, "MOVE", "gone.txt", "", []string{"Destination", "/gone2.txt"}, 404, "not found", "gone2.txt"},
		{"MOVE of a missing file onto a file", s, "MOVE", "gone.txt", "", []string{"Destination", "/a.txt"}, 404, "not found", ""},
		{"COPY into itself", s, "COPY", "sub", "", []string{"Destination", "/sub/inner"}, 403, "inside it", "sub/inner"},
		{"MOVE into itself", s, "MOVE", "sub", "", []string{"Destination", "/sub/inner/x"}, 403, "inside it", "sub/inner"},
		{"COPY onto itself", s, "COPY", "a.txt", "", []string{"Destination", "/a.txt"}, 403, "the source", ""},
		{"COPY of the root", s, "COPY", "", "", []string{"Destination", "/r"}, 403, "inside it", "r"},
		{"bad Overwrite", s, "COPY", "a.txt", "", []string{"Destination", "/b.txt", "Overwrite", "yes"}, 400, "Overwrite", "b.txt"},
		{"Destination on another host", s, "COPY", "a.txt", "", []string{"Destination", "http://example.com/b.txt"}, 502, "another server", "b.txt"},
		{"Destination under the reserved prefix", s, "COPY", "a.txt", "", []string{"Destination", "/_largo/b.txt"}, 403, "reserved", ""},
		{"Destination a dotfile", s, "COPY", "a.txt", "", []string{"Destination", "/.b.txt"}, 403, "reserved", ".b.txt"},
		{"PUT with a malformed If", s, "PUT", "a.txt", "new", []string{"If", "garbage"}, 400, "malformed If header", ""},
		{"PUT with an unclosed If list", s, "PUT", "a.txt", "new", []string{"If", "(<opaquelocktoken:x>"}, 400, "malformed If header", ""},
		{"DELETE with a malformed If", s, "DELETE", "a.txt", "", []string{"If", "("}, 400, "malformed If header", ""},
		{"Destination not a path", s, "MOVE", "a.txt", "", []string{"Destination", "%zz"}, 400, "Destination", ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			if tc.s == nil {
				t.Skip("no free space to check on a bucket")
			}
			var resp *http.Response
			var text string
			hdr := append(tc.hdr[:len(tc.hdr):len(tc.hdr)], bearer...)
			if tc.body != "" {
				resp, text = send(t, tc.method, tc.s.URL+tc.path, strings.NewReader(tc.body), int64(len(tc.body)), hdr...)
			} else {
				resp, text = send(t, tc.method, tc.s.URL+tc.path, nil, 0, hdr...)
			}
			if resp.StatusCode != tc.code || !strings.Contains(text, tc.reason) || strings.Contains(strings.TrimSuffix(text, "\n"), "\n") {
				t.Errorf("%s /%s: %d %q; want %d and one line with %q", tc.method, tc.path, resp.StatusCode, text, tc.code, tc.reason)
			}
			if tc.absent != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.absent)); err == nil {
					t.Errorf("%s is there", tc.absent)
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "a" {
		t.Errorf("a.txt = %q, %v; want it untouched", b, err)
	}
	g.clean(t)
}

// TestDAVLockSweep: a server with writes on removes the records of
// expired locks it finds in the state area, and keeps the live ones.
func TestDAVLockSweep(t *testing.T) {
	dir := t.TempDir()
	locks := filepath.Join(dir, ".largo", "dav", "locks")
	os.MkdirAll(locks, 0o755)
	rec := func(name, expires string) string {
		return `{"token":"opaquelocktoken:00000000-0000-4000-8000-000000000000/_` + name + `","root":"` + name + `","zero_depth":true,"expires":"` + expires + `","timeout":60}`
	}
	os.WriteFile(filepath.Join(locks, "_old.txt"), []byte(rec("old.txt", "2020-01-01T00:00:00Z")), 0o644)
	os.WriteFile(filepath.Join(locks, "_live.txt"), []byte(rec("live.txt", "2999-01-01T00:00:00Z")), 0o644)
	s := startWriter(t, dir, "--webdav")
	if !waitFor(10*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(locks, "_old.txt"))
		return os.IsNotExist(err)
	}) {
		t.Error("the expired lock's record is still there")
	}
	if _, err := os.Stat(filepath.Join(locks, "_live.txt")); err != nil {
		t.Errorf("the live lock's record: %v", err)
	}
	if resp, _ := put(t, s.URL+"live.txt", strings.NewReader("x"), 1, bearer...); resp.StatusCode != 423 {
		t.Errorf("PUT of the live lock's file: %d; want 423", resp.StatusCode)
	}
}
