package dav

import (
	"context"
	"encoding/xml"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"largo"
	"largo/gate"
	"largo/ingest"
)

// seedFiles writes each name of files, with its content, below dir.
func seedFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hrefs returns the hrefs of a PROPFIND's answer, in order.
func hrefs(t *testing.T, body string) []string {
	t.Helper()
	var ms multistatus
	if err := xml.Unmarshal([]byte(body), &ms); err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	var out []string
	for _, r := range ms.Responses {
		out = append(out, r.Href)
	}
	return out
}

// TestLinkScope: a request through a share link (as package serve hands
// it over: its URL rewritten to the store name, with the link's URL and
// folder) is answered in the link's URL space: every href below the
// link's URL, none naming the folder it stands for; a lock above the
// link's folder is shown rooted at the link's URL, without its owner.
func TestLinkScope(t *testing.T) {
	dir := t.TempDir()
	seedFiles(t, dir, map[string]string{"private/top.txt": "t", "private/deep/d.txt": "d", "private/deep/sub/e f.txt": "e"})
	h, view, _ := newHandler(t, dir, ingest.Config{})
	const base, root = "/_largo/s/T0K3N/", "private/deep"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, base)
		if !ok {
			// The files' own URLs.
			h.ServeDAV(w, asUser(r), view, "/", "", nil)
			return
		}
		r2 := r.WithContext(gate.With(r.Context(), gate.LinkHolder("link1")))
		u := *r.URL
		u.Path = "/" + largo.Join(root, rest)
		if rest == "" {
			u.Path = "/" + root + "/"
		}
		r2.URL = &u
		h.ServeDAV(w, r2, view, base, root, nil)
	}))
	t.Cleanup(srv.Close)

	_, body := do(t, "PROPFIND", srv.URL+base, findLocks, "Depth", "1")
	want := []string{base, base + "d.txt", base + "sub/"}
	if got := hrefs(t, body); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("PROPFIND of Depth 1 through the link: %q; want %q", got, want)
	}
	if strings.Contains(body, "private") {
		t.Errorf("the answer names the link's folder:\n%s", body)
	}
	_, body = do(t, "PROPFIND", srv.URL+base+"sub/", "", "Depth", "1")
	if got, want := hrefs(t, body), []string{base + "sub/", base + "sub/e%20f.txt"}; !slices.Equal(got, want) {
		t.Errorf("PROPFIND of a folder below: %q; want %q", got, want)
	}
	_, body = do(t, "PROPPATCH", srv.URL+base+"d.txt", `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:x xmlns:Z="urn:t">1</Z:x></D:prop></D:set></D:propertyupdate>`)
	if got, want := hrefs(t, body), []string{base + "d.txt"}; !slices.Equal(got, want) {
		t.Errorf("PROPPATCH: %q; want %q", got, want)
	}
	// The property is the file's, whatever URL named it.
	_, body = do(t, "PROPFIND", srv.URL+"/private/deep/d.txt", `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><Z:x xmlns:Z="urn:t"/></D:prop></D:propfind>`, "Depth", "0")
	if !strings.Contains(body, ">1</x>") {
		t.Errorf("the property set through the link, at the file's own URL:\n%s", body)
	}

	resp := send(t, newRequest(t, "LOCK", srv.URL+"/private", strings.Replace(lockBody, "</D:lockinfo>", "<D:owner>alice</D:owner></D:lockinfo>", 1), userHeader, "alice"))
	if resp.StatusCode != 201 && resp.StatusCode != 200 {
		t.Fatalf("LOCK /private: %d %s", resp.StatusCode, resp.text)
	}
	_, body = do(t, "PROPFIND", srv.URL+base+"d.txt", findLocks, "Depth", "0")
	if got := discovered(t, body)[base+"d.txt"]; len(got) != 1 || got[0].Root != base || got[0].Owner != nil || got[0].Token != "" {
		t.Errorf("the lock of the folder above, through the link: %+v; want it rooted at %s, without owner or token", got, base)
	}
	if strings.Contains(body, "private") {
		t.Errorf("the answer names the folder above the link:\n%s", body)
	}
}

// shuffled is a store that lists folders in reverse name order.
type shuffled struct{ *counting }

func (s shuffled) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		var all []largo.Info
		for in, err := range s.counting.List(ctx, name) {
			if err != nil {
				yield(largo.Info{}, err)
				return
			}
			all = append(all, in)
		}
		for _, in := range slices.Backward(all) {
			if !yield(in, nil) {
				return
			}
		}
	}
}

// TestPropfindShows: a PROPFIND of Depth 1 leaves out the entries the
// listings' test hides, feeding the test the sidecars and the files they
// would stand for in name order, however the store lists them, and still
// looks the entries it shows up in the listing read in step with the
// walk.
func TestPropfindShows(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a.txt": "a", "a.txt.gz": "z", "a.txt.zst": "z", "a.txt.bak": "k", "b.log": "b", "b.log.br": "z", "c.tar.gz": "c", "d/x": "x", "e/y": "y", "e.gz": "z"}
	for i := range 50 {
		files[fmt.Sprintf("f%03d", i)] = "f"
	}
	seedFiles(t, dir, files)
	h, view, _ := newHandler(t, dir, ingest.Config{})
	var (
		mu  sync.Mutex
		fed []string
	)
	// Hides NAME.gz, NAME.br and NAME.zst where NAME was fed before, as
	// the listings' sidecar test does, with the order it is given.
	shows := func(ctx context.Context, dir string) func(largo.Info) bool {
		var seen []string
		return func(in largo.Info) bool {
			mu.Lock()
			fed = append(fed, in.Name)
			mu.Unlock()
			if in.IsDir {
				return true
			}
			seen = append(seen, in.Name)
			base, _, ok := largo.SidecarBase(in.Name)
			return !ok || !slices.Contains(seen, base)
		}
	}
	for _, tc := range []struct {
		what  string
		store largo.Store
	}{{"listed in order", view}, {"listed backwards", shuffled{view}}} {
		t.Run(tc.what, func(t *testing.T) {
			fed = nil
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeDAV(w, asUser(r), tc.store, "/", "", shows)
			}))
			defer srv.Close()
			view.stats.Store(0)
			code, body := do(t, "PROPFIND", srv.URL+"/", "", "Depth", "1")
			got := hrefs(t, body)
			for _, gone := range []string{"/a.txt.gz", "/a.txt.zst", "/b.log.br"} {
				if slices.Contains(got, gone) {
					t.Errorf("PROPFIND of Depth 1 lists %s", gone)
				}
			}
			if code != 207 || !slices.Contains(got, "/c.tar.gz") || !slices.Contains(got, "/e.gz") || !slices.Contains(got, "/a.txt.bak") || !slices.Contains(got, "/d/") || !slices.Contains(got, "/e/") || len(got) != 1+len(files)-3 {
				t.Errorf("PROPFIND of Depth 1: %d %q", code, got)
			}
			if want := []string{"a.txt", "a.txt.gz", "a.txt.zst", "b.log", "b.log.br", "c.tar.gz", "e.gz"}; !slices.Equal(fed, want) {
				t.Errorf("the test was fed %q; want %q", fed, want)
			}
			if n := view.stats.Load(); n > 5 {
				t.Errorf("%d look-ups; want a few (at most 5)", n)
			}
			// Depth 0 of a hidden entry still answers it.
			if code, _ := do(t, "PROPFIND", srv.URL+"/a.txt.gz", "", "Depth", "0"); code != 207 {
				t.Errorf("PROPFIND of a hidden entry itself: %d", code)
			}
		})
	}
}
