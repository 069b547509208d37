package serve

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/links"
)

const acceptHTML = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

// TestUploadPage: a browser at a drop box's URL, or a user who may write
// in a folder and not list it, gets the upload page, which shows nothing
// of the folder; anything else is refused as before: a client that does
// not ask for HTML, a folder below the drop box, a folder the visitor may
// not write in, a name that is no folder.
func TestUploadPage(t *testing.T) {
	f := newAccessFixture(t)
	cfg := f.h.cfg
	cfg.Resumable = http.NotFoundHandler() // the uploader's endpoint
	f.h = New(withPage(cfg))
	drop := f.link(t, links.Link{Kind: links.Drop, Path: "inbox", Maker: "bob", Expires: f.now.Add(time.Hour), MaxUpload: 1 << 20, FileTTL: 3600}, "")
	for _, c := range []struct {
		what, path, user string
		hdr              []string
		code             int
		want             []string
	}{
		{"a drop box", drop, "", []string{"Accept", acceptHTML}, 200, []string{"<h1>Send files</h1>", `data-endpoint="` + drop + `_largo/uploads/"`, "Each file may be up to 1 MiB.", "removed 1 hour after it arrives", `data-folder=""`}},
		{"a drop box without its slash", strings.TrimSuffix(drop, "/"), "", []string{"Accept", acceptHTML}, 301, nil},
		{"a drop box, for curl", drop, "", nil, 403, nil},
		{"a drop box, as JSON", drop + "?format=json", "", []string{"Accept", acceptHTML}, 403, nil},
		{"a drop box's archive", drop + "?archive=zip", "", []string{"Accept", acceptHTML}, 403, nil},
		{"below a drop box", drop + "sub/", "", []string{"Accept", acceptHTML}, 403, nil},
		{"bob's write-only folder", "/inbox/", "bob", []string{"Accept", acceptHTML}, 200, []string{"<h1>Upload to /inbox/</h1>", `data-endpoint="/_largo/uploads/"`, "here you may write"}},
		{"bob's write-only folder, for curl", "/inbox/", "bob", nil, 403, nil},
		{"a folder bob may not write in", "/private/", "bob", []string{"Accept", acceptHTML}, 403, nil},
		{"a folder anonymous may not write in", "/private/", "", []string{"Accept", acceptHTML}, 401, nil},
		{"no folder", "/inbox/nothing/", "bob", []string{"Accept", acceptHTML}, 403, nil},
	} {
		rec := f.req("GET", c.path, c.user, c.hdr...)
		body := rec.Body.String()
		if rec.Code != c.code {
			t.Errorf("%s: %d %s; want %d", c.what, rec.Code, strings.TrimSpace(body), c.code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("%s: the page lacks %s", c.what, w)
			}
		}
		if c.code == 200 && (strings.Contains(body, "old.txt") || rec.Header().Get("Content-Security-Policy") == "") {
			t.Errorf("%s: the page shows the folder's files, or has no policy", c.what)
		}
		if c.code == 200 && c.user == "" && strings.Contains(body, "inbox") {
			t.Errorf("%s: the drop box's page says where its folder is", c.what)
		}
	}

	// The form, as a browser without JavaScript posts it: the page again,
	// with what was stored; a name taken is refused.
	post := func(filename, content string) *httptest.ResponseRecorder {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		fw, _ := mw.CreateFormFile("file", filename)
		io.WriteString(fw, content)
		mw.Close()
		req := httptest.NewRequest("POST", drop, &b)
		req.RemoteAddr, req.Host = "127.0.0.1:5555", "127.0.0.1"
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Accept", acceptHTML)
		req.Header.Set("Origin", "http://127.0.0.1")
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		return rec
	}
	rec := post("report.txt", "hello")
	if rec.Code != 201 || !strings.Contains(rec.Body.String(), `<span class="sent-name">report.txt</span> <span class="sent-size">5 B</span>`) || !strings.Contains(rec.Body.String(), "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824") {
		t.Errorf("the form's answer: %d\n%s", rec.Code, rec.Body.String())
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "inbox", "report.txt")); string(b) != "hello" {
		t.Errorf("inbox/report.txt holds %q", b)
	}
	if rec := post("old.txt", "mine"); rec.Code != http.StatusPreconditionFailed {
		t.Errorf("a form over a name taken: %d", rec.Code)
	}
}
