package serve

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"largo/auth"
	"largo/links"
	"largo/ui"
)

// TestFolderPage checks what the handler gives the page: its policy, the
// view from the query, and an upload area only when resumable uploads are
// on and the requester may write.
func TestFolderPage(t *testing.T) {
	files := map[string]string{"a/big": strings.Repeat("x", 2048), "a/small": "x", "a/sub/f": "y"}
	h, _ := newTestHandler(t, files)
	rec := do(h, "GET", "/a/", "Accept", "text/html")
	page := rec.Body.String()
	nonce := regexp.MustCompile(`<script [^>]*nonce="([^"]+)"`).FindStringSubmatch(page)
	if rec.Code != 200 || nonce == nil || rec.Header().Get("Content-Security-Policy") != ui.CSP(nonce[1]) || rec.Header().Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("page: %d %v", rec.Code, rec.Header())
	}
	if strings.Contains(page, `id="upload"`) {
		t.Error("upload area without writes")
	}
	for _, want := range []string{`href="?archive=zip"`, `href="?archive=tar.zst"`, `data-folder="a"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	names := func(page string) string {
		var n []string
		for _, m := range regexp.MustCompile(`<tr data-name="([^"]*)"`).FindAllStringSubmatch(page, -1) {
			n = append(n, m[1])
		}
		return strings.Join(n, " ")
	}
	if got := names(doQuery(h, "/a/", "sort=size&order=desc").Body.String()); got != "sub big small" {
		t.Errorf("by size, descending: %s", got)
	}
	if got := names(doQuery(h, "/a/", "q=SMA").Body.String()); got != "small" {
		t.Errorf("filtered: %s", got)
	}
	// The JSON listing keeps its own order whatever the query.
	if b := doQuery(h, "/a/", "sort=size&order=desc&format=json").Body.String(); !regexp.MustCompile(`(?s)"sub".*"big".*"small"`).MatchString(b) {
		t.Errorf("JSON listing: %s", b)
	}
	if rec := do(h, "HEAD", "/a/"); rec.Code != 200 || rec.Body.Len() != 0 || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "'nonce-") {
		t.Errorf("HEAD: %d %d bytes", rec.Code, rec.Body.Len())
	}

	withToken, _, _ := newWriteHandler(t, files, Config{Resumable: http.NotFoundHandler()})
	if p := do(withToken, "GET", "/a/").Body.String(); strings.Contains(p, `id="upload"`) {
		t.Error("an upload area for who may not write")
	}
	if p := do(withToken, "GET", "/a/", "Authorization", "Bearer "+token).Body.String(); !strings.Contains(p, `data-endpoint="/_largo/uploads/"`) {
		t.Error("no upload area for who may write")
	}
	open, _, _ := newWriteHandler(t, files, Config{Resumable: http.NotFoundHandler(), Access: auth.New(auth.OneUser("", true), nil)})
	if p := do(open, "GET", "/a/").Body.String(); !strings.Contains(p, `data-endpoint="/_largo/uploads/"`) {
		t.Error("no upload area on an open server")
	}
	noTus, _, _ := newWriteHandler(t, files, Config{})
	if p := do(noTus, "GET", "/a/").Body.String(); strings.Contains(p, `id="upload"`) {
		t.Error("upload area without resumable uploads")
	}
}

// TestAssets serves the page's assets under the reserved prefix.
func TestAssets(t *testing.T) {
	h, _ := newTestHandler(t, nil)
	page := do(h, "GET", "/").Body.String()
	m := regexp.MustCompile(`src="(/_largo/ui/[0-9a-f]+/app\.js)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no script in the page:\n%s", page)
	}
	rec := do(h, "GET", m[1])
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
		t.Errorf("app.js: %d %v", rec.Code, rec.Header())
	}
	if rec := do(h, "HEAD", m[1]); rec.Code != 200 {
		t.Errorf("HEAD app.js: %d", rec.Code)
	}
	for _, p := range []string{UIPrefix + "x/missing.js", UIPrefix + "app.js", UIPrefix} {
		if rec := do(h, "GET", p); rec.Code != 404 {
			t.Errorf("%s: %d", p, rec.Code)
		}
	}
	if rec := do(h, "POST", m[1]); rec.Code != 405 && rec.Code != 404 {
		t.Errorf("POST app.js: %d", rec.Code)
	}
}

// doQuery sends a GET of path with a query string.
func doQuery(h http.Handler, path, query string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path+"?"+query, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestPageSignedIn: the page says who is signed in and what they may do
// in its folder; an anonymous visitor of a server with users is offered
// to sign in and come back; a share link's visitor, or anyone on a server
// without users, is offered nothing.
func TestPageSignedIn(t *testing.T) {
	f := newAccessFixture(t)
	for _, c := range []struct {
		path, user string
		want       []string
		absent     []string
	}{
		{"/pub/", "alice", []string{`Signed in as <strong>alice</strong><span class="may"> · here you may read and list</span>`}, []string{"Sign in", `id="upload"`}},
		{"/private/", "alice", []string{`Signed in as <strong>alice</strong><span class="may"> · here you may read, list, write and delete</span>`}, []string{"Sign in"}},
		{"/", "bob", []string{`Signed in as <strong>bob</strong><span class="may"> · here you may read and list</span>`}, nil},
		{"/pub/", "", []string{`<a href="/?login=%2Fpub%2F">Sign in</a>`}, []string{"Signed in", `id="upload"`}},
		{"/", "", []string{`<a href="/?login=%2F">Sign in</a>`}, []string{"Signed in"}},
	} {
		page := f.req("GET", c.path, c.user, "Accept", "text/html").Body.String()
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s as %q: page lacks %s", c.path, c.user, w)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(page, a) {
				t.Errorf("%s as %q: page shows %s", c.path, c.user, a)
			}
		}
	}

	shared := f.req("GET", f.link(t, links.Link{Kind: links.Folder, Path: "pub", Expires: f.now.Add(time.Hour)}, ""), "").Body.String()
	if !strings.Contains(shared, "a.txt") || strings.Contains(shared, "Sign in") || strings.Contains(shared, "Signed in") {
		t.Errorf("share link's page:\n%s", shared)
	}
	open, _, _ := newWriteHandler(t, nil, Config{Resumable: http.NotFoundHandler(), Access: auth.New(auth.OneUser("", true), nil)})
	plain, _ := newTestHandler(t, nil)
	for what, h := range map[string]http.Handler{"open uploads": open, "no policy": plain} {
		if p := do(h, "GET", "/").Body.String(); strings.Contains(p, "Sign in") || strings.Contains(p, "Signed in") {
			t.Errorf("%s: the page offers to sign in", what)
		}
	}
	withToken, _, _ := newWriteHandler(t, nil, Config{Resumable: http.NotFoundHandler()})
	if p := do(withToken, "GET", "/").Body.String(); !strings.Contains(p, `<a href="/?login=%2F">Sign in</a>`) {
		t.Error("a server with a token offers no sign-in")
	}
	if p := do(withToken, "GET", "/", "Authorization", basic("anyone", token)).Body.String(); !strings.Contains(p, "Signed in as") || !strings.Contains(p, `id="upload"`) {
		t.Error("the token as a basic-auth password does not sign in to the upload area")
	}
}
