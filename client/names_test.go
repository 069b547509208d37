package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"largo/client"
)

// TestGetTreeOddNames downloads a folder whose names hold what a URL must
// escape: every file arrives under its own name with its own bytes, and
// nothing else is left in the target folder.
func TestGetTreeOddNames(t *testing.T) {
	dir := t.TempDir()
	want := map[string]string{}
	for i, name := range []string{"100%.txt", "a%2Fb.txt", "%41.txt", "q?.txt", "h#.txt", "s p.txt", "é.txt", "+;=,@$&.txt", "50%/x%2e%2e.txt", "sp ace/ü#?.bin"} {
		want[name] = writeRandom(t, filepath.Join(dir, filepath.FromSlash(name)), int64(100+i), byte(30+i))
	}
	srv, _ := largoServer(t, dir)
	out := filepath.Join(t.TempDir(), "tree")
	var l logs
	tr, err := newClient(&l, 0).GetTree(context.Background(), srv.URL+"/", out)
	if err != nil || tr.Files != len(want) || tr.Failed != 0 {
		t.Fatalf("%+v %v\n%s", tr, err, l.String())
	}
	for name, sum := range want {
		if got := fileSHA(t, filepath.Join(out, filepath.FromSlash(name))); got != sum {
			t.Errorf("%s: wrong bytes", name)
		}
	}
	var found []string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			found = append(found, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(found) != len(want) {
		t.Errorf("the target folder holds %q; want only the %d files", found, len(want))
	}
	// A folder URL given without its slash, naming a folder with a %.
	tr, err = newClient(&l, 0).GetTree(context.Background(), srv.URL+"/50%25", filepath.Join(t.TempDir(), "50"))
	if err != nil || tr.Files != 1 {
		t.Fatalf("50%%: %+v %v\n%s", tr, err, l.String())
	}
}

// listedServer serves a JSON listing of files at / and the files under
// their decoded paths, with the sizes and digests given, whatever the
// bytes: a server whose listing and files disagree.
type listedFile struct {
	body   string
	size   int64  // listed size
	digest string // Repr-Digest to send, if any
	chunk  bool   // send without Content-Length
}

func listedServer(t *testing.T, files map[string]listedFile) string {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			type entry struct {
				Name string `json:"name"`
				Size int64  `json:"size"`
			}
			var l struct {
				Entries []entry `json:"entries"`
			}
			for name, f := range files {
				l.Entries = append(l.Entries, entry{name, f.size})
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(l)
			return
		}
		f, ok := files[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if f.digest != "" {
			w.Header().Set("Repr-Digest", f.digest)
		}
		if !f.chunk {
			w.Header().Set("Content-Length", strconv.Itoa(len(f.body)))
		}
		w.Write([]byte(f.body))
		if f.chunk {
			http.NewResponseController(w).Flush()
		}
	})
	return httpServer(t, h).URL
}

func sha256Digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
}

// TestGetTreeListedSize serves files whose bytes disagree with the listing
// (size) or with their Repr-Digest: each fails, and no file of the wrong
// bytes, part file or state is left; the right ones arrive.
func TestGetTreeListedSize(t *testing.T) {
	files := map[string]listedFile{
		"longer.txt":   {body: "twenty bytes of text", size: 10},
		"shorter.txt":  {body: "five!", size: 10},
		"chunked.txt":  {body: "not the listed size", size: 3, chunk: true},
		"digest.txt":   {body: "right size", size: 10, digest: sha256Digest("other text")},
		"good.txt":     {body: "just right", size: 10, digest: sha256Digest("just right")},
		"nodigest.txt": {body: "no digest!", size: 10},
	}
	srv := listedServer(t, files)
	out := filepath.Join(t.TempDir(), "tree")
	for _, segments := range []int{1, 4} {
		var l logs
		c := newClient(&l, 2)
		c.Segments = segments
		tr, err := c.GetTree(context.Background(), srv+"/", out)
		if err == nil || errors.Is(err, client.ErrResumable) || tr.Failed != 4 || tr.Files+tr.UpToDate != 2 {
			t.Fatalf("-j %d: %+v %v\n%s", segments, tr, err, l.String())
		}
		for _, name := range []string{"longer.txt", "shorter.txt", "chunked.txt", "digest.txt"} {
			for _, p := range []string{name, name + ".part", name + ".part.json"} {
				if exists(filepath.Join(out, p)) {
					t.Errorf("-j %d: %s is left", segments, p)
				}
			}
		}
		if !l.has("listing") || !l.has("digest mismatch") {
			t.Errorf("-j %d: the notices do not say why:\n%s", segments, l.String())
		}
		for _, name := range []string{"good.txt", "nodigest.txt"} {
			if b, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(b) != files[name].body {
				t.Errorf("-j %d: %s: %q %v", segments, name, b, err)
			}
		}
	}
}

// TestGetTreeLocalNames serves names no local file may have beside one
// that is only odd: the bad ones are refused with their reason, nothing is
// written outside the target folder, and the odd one arrives.
func TestGetTreeLocalNames(t *testing.T) {
	files := map[string]listedFile{
		`back\slash.txt`: {body: "backslash", size: 9},
		"a/b":            {body: "x", size: 1},
		"..":             {body: "x", size: 1},
		"":               {body: "x", size: 1},
		"../up.txt":      {body: "x", size: 1},
		".hidden":        {body: "x", size: 1},
	}
	srv := listedServer(t, files)
	base := t.TempDir()
	out := filepath.Join(base, "out")
	var l logs
	tr, err := newClient(&l, 0).GetTree(context.Background(), srv+"/", out)
	bad := 5
	if runtime.GOOS == "windows" {
		bad = 6
	}
	if err == nil || tr.Failed != bad || tr.Files != len(files)-bad {
		t.Fatalf("%+v %v\n%s", tr, err, l.String())
	}
	for _, why := range []string{"path separator", "dot name", "empty name", "hidden name"} {
		if !l.has(why) {
			t.Errorf("no notice says %q:\n%s", why, l.String())
		}
	}
	if exists(filepath.Join(base, "up.txt")) || exists(filepath.Join(out, "a")) || exists(filepath.Join(out, ".hidden")) {
		t.Fatal("a refused name was written")
	}
	if runtime.GOOS != "windows" {
		if b, err := os.ReadFile(filepath.Join(out, `back\slash.txt`)); err != nil || string(b) != "backslash" {
			t.Errorf(`back\slash.txt: %q %v`, b, err)
		}
	}
}

// TestGetNoPartLeft ends downloads before any byte: neither a 404 nor an
// answer of the wrong size leaves a part file.
func TestGetNoPartLeft(t *testing.T) {
	dir := t.TempDir()
	srv, _ := largoServer(t, dir)
	out := filepath.Join(t.TempDir(), "m")
	var l logs
	for _, segments := range []int{1, 4} {
		c := newClient(&l, 0)
		c.Segments = segments
		var se *client.StatusError
		if _, err := c.Get(context.Background(), srv.URL+"/missing", out); !errors.As(err, &se) || se.Code != 404 {
			t.Fatalf("-j %d: %v", segments, err)
		}
		if exists(out+".part") || exists(out+".part.json") || exists(out) {
			t.Errorf("-j %d: a 404 left a file", segments)
		}
	}
}

// TestTargetEscapedNames takes the local name from the URL as it is
// spelt: an escaped % is part of the name, an escaped slash makes a name
// no local file may have.
func TestTargetEscapedNames(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ url, want string }{
		{"http://h/d/100%25.txt", "100%.txt"},
		{"http://h/d/%C3%A9%20x.txt", "é x.txt"},
		{"http://h/d/a%2Fb.txt", ""},
		{"http://h/d/..%2F..%2Fx", ""},
		{"http://h", ""},
	} {
		got, err := client.Target(c.url, dir+string(filepath.Separator))
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s: target %s; want an error", c.url, got)
		case c.want != "" && (err != nil || got != filepath.Join(dir, c.want)):
			t.Errorf("%s: target %q %v; want %q", c.url, got, err, c.want)
		}
	}
}
