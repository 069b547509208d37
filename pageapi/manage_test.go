package pageapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"largo"
	"largo/disk"
)

func moveForm(from, to string) string {
	return url.Values{"from": {from}, "to": {to}}.Encode()
}

// TestMove: a move or a rename is the gate's and the pipeline's to
// decide, replaces nothing, and moves a file only as the page listed it.
func TestMove(t *testing.T) {
	f := newAccessFixture(t)
	etag := f.get("/private/s.txt", "alice").Header().Get("ETag")
	for _, tt := range []struct {
		what, user, from, to string
		hdr                  []string
		code                 int
	}{
		{"anonymous", "", "/private/s.txt", "/private/r.txt", nil, 401},
		{"bob may not delete in /pub", "bob", "/pub/a.txt", "/inbox/a.txt", nil, 403},
		{"bob may not read in /inbox", "bob", "/inbox/old.txt", "/inbox/new.txt", nil, 403},
		{"into a folder alice may not write", "alice", "/private/s.txt", "/pub/s.txt", nil, 403},
		{"a changed file", "alice", "/private/s.txt", "/private/r.txt", []string{"If-Match", `"not-it"`}, 412},
		{"If-None-Match", "alice", "/private/s.txt", "/private/r.txt", []string{"If-None-Match", "*"}, 400},
		{"onto a file", "alice", "/private/s.txt", "/private/deep/t.txt", nil, 409},
		{"into a missing folder", "alice", "/private/s.txt", "/private/nope/s.txt", nil, 409},
		{"a folder into itself", "alice", "/private/deep", "/private/deep/deeper", nil, 403},
		{"to the same name", "alice", "/private/s.txt", "/private/s.txt", nil, 400},
		{"to a hidden name", "alice", "/private/s.txt", "/private/.s", nil, 400},
		{"a missing file", "alice", "/private/nope.txt", "/private/r.txt", nil, 404},
		{"from another site", "alice", "/private/s.txt", "/private/r.txt", []string{"Origin", "https://evil.example"}, 403},
		{"rename", "alice", "/private/s.txt", "/private/r.txt", []string{"If-Match", etag}, 201},
		{"a folder", "alice", "/private/deep", "/private/moved", nil, 201},
	} {
		rec := f.post(MovePath, tt.user, moveForm(tt.from, tt.to), tt.hdr...)
		if rec.Code != tt.code {
			t.Errorf("%s: %d %s; want %d", tt.what, rec.Code, strings.TrimSpace(rec.Body.String()), tt.code)
		}
	}
	for name, want := range map[string]bool{"private/s.txt": false, "private/r.txt": true, "private/moved/t.txt": true, "private/deep": false, "pub/a.txt": true, "inbox/old.txt": true} {
		if f.exists(name) != want {
			t.Errorf("%s exists: %v; want %v", name, !want, want)
		}
	}
	rec := f.post(MovePath, "alice", moveForm("/private/r.txt", "/private/a b.txt"))
	var out struct{ Path string }
	json.Unmarshal(rec.Body.Bytes(), &out)
	if rec.Code != 201 || rec.Header().Get("Location") != "/private/a%20b.txt" || out.Path != "/private/a%20b.txt" {
		t.Errorf("answer of a move: %d %q %q", rec.Code, rec.Header().Get("Location"), rec.Body.String())
	}
}

// noRename is a folder that cannot rename, as a bucket.
type noRename struct{ *disk.Store }

func (noRename) Rename() {} // hides disk.Store's Rename

// TestMoveWithoutRename: on a store without rename, a folder moves by
// copies and removals, whole.
func TestMoveWithoutRename(t *testing.T) {
	f := newFixture(t, map[string]string{"a/x.txt": "x", "a/sub/y.txt": "yy", "b.txt": "b"}, setup{
		token: token, writes: true,
		store: func(s *disk.Store) largo.Store { return noRename{s} },
	})
	for _, m := range [][2]string{{"/a", "/c"}, {"/b.txt", "/c/b.txt"}} {
		rec := f.post(MovePath, "", moveForm(m[0], m[1]), "Authorization", "Bearer "+token)
		if rec.Code != 201 {
			t.Fatalf("move %s: %d %s", m[0], rec.Code, rec.Body.String())
		}
	}
	for name, want := range map[string]bool{"c/x.txt": true, "c/sub/y.txt": true, "c/b.txt": true, "a": false, "b.txt": false} {
		if f.exists(name) != want {
			t.Errorf("%s exists: %v; want %v", name, !want, want)
		}
	}
}

// TestMkdir: a new folder where the gate lets its maker write, never over
// anything, never with its parents.
func TestMkdir(t *testing.T) {
	f := newAccessFixture(t)
	for _, tt := range []struct {
		user, path string
		code       int
	}{
		{"", "/private/new", 401},
		{"bob", "/pub/new", 403},
		{"alice", "/private/s.txt", 409},
		{"alice", "/private/no/new", 409},
		{"alice", "/private/.new", 400},
		{"alice", "/private/new\u202e", 400},
		{"alice", "/private/new", 201},
		{"alice", "/private/new/", 409},
	} {
		rec := f.post(MkdirPath, tt.user, url.Values{"path": {tt.path}}.Encode())
		if rec.Code != tt.code {
			t.Errorf("%s as %q: %d %s; want %d", tt.path, tt.user, rec.Code, strings.TrimSpace(rec.Body.String()), tt.code)
		}
	}
	if fi, err := os.Stat(filepath.Join(f.dir, "private", "new")); err != nil || !fi.IsDir() {
		t.Errorf("the new folder: %v", err)
	}
	if f.exists("pub/new") {
		t.Error("bob made a folder in /pub")
	}
}

// TestMay: what the page is told each user may do is what the gate would
// let through.
func TestMay(t *testing.T) {
	f := newAccessFixture(t)
	ask := func(user string, paths ...string) map[string][]string {
		t.Helper()
		rec := f.post(MayPath, user, url.Values{"path": paths}.Encode())
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", MayPath, rec.Code, rec.Body.String())
		}
		var out map[string][]string
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tt := range []struct {
		user, path string
		want       []string
	}{
		{"alice", "/private/s.txt", []string{"delete", "move", "rename", "share"}},
		{"alice", "/private/deep/", []string{"delete", "move", "rename", "share", "write", "drop"}},
		{"alice", "/pub/a.txt", []string{"share"}},
		{"alice", "/", []string{"share"}}, // she reads all of it
		{"bob", "/pub/a.txt", []string{"share"}},
		{"bob", "/pub/", []string{}}, // /pub/sealed is hidden from him: no link to all of /pub
		{"bob", "/inbox/", []string{"write", "drop"}},
		{"bob", "/private/s.txt", []string{}},
		{"", "/pub/a.txt", []string{}},
		{"", "/private/", []string{}},
		{"alice", "/private/.hidden", []string{}},
	} {
		got := ask(tt.user, tt.path)[tt.path]
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s as %q: %q; want %q", tt.path, tt.user, got, tt.want)
		}
	}
	if rec := f.post(MayPath, "alice", strings.Repeat("path=/a&", maxMayPaths+1)); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("%d paths: %d", maxMayPaths+1, rec.Code)
	}
	if rec := f.post(MayPath, "alice", "path=/a/../b"); rec.Code != http.StatusBadRequest {
		t.Errorf("a path that leaves the root: %d", rec.Code)
	}
}
