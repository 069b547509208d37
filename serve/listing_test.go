package serve

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"largo/auth"
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
