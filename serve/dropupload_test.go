package serve

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/links"
	"largo/resumable"
)

// TestDropBoxTus: a drop box takes tus uploads created through its URL,
// as its holder's, into its folder (the metadata's folder read within
// it) and nowhere else: a name taken is refused at the creation, a folder
// below it and a link of another kind take none, and a revoked link
// creates nothing more.
func TestDropBoxTus(t *testing.T) {
	f := newAccessFixture(t)
	clock := func() time.Time { return f.now }
	rh, err := resumable.New(resumable.Config{Writes: f.h.cfg.Writes, BasePath: ResumablePrefix, Staging: diskStaging(t, f.d), State: f.d.State(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.h.cfg
	cfg.Resumable = rh
	f.h = New(cfg)
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	exp := f.now.Add(time.Hour)
	drop := f.link(t, links.Link{Kind: links.Drop, Path: "inbox", Maker: "bob", Expires: exp}, "")
	read := f.link(t, links.Link{Kind: links.Folder, Path: "private", Maker: "alice", Expires: exp}, "")

	// create makes a tus upload of size bytes at base with metadata and
	// returns the answer.
	create := func(base string, size int, meta ...string) *http.Response {
		t.Helper()
		var pairs []string
		for i := 0; i+1 < len(meta); i += 2 {
			pairs = append(pairs, meta[i]+" "+base64.StdEncoding.EncodeToString([]byte(meta[i+1])))
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+base, nil)
		req.Header.Set("Tus-Resumable", "1.0.0")
		req.Header.Set("Upload-Length", fmt.Sprint(size))
		req.Header.Set("Upload-Metadata", strings.Join(pairs, ","))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := create(drop+dropUploads, 5, "filename", "new.txt")
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("a tus creation through the drop box: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	if !strings.Contains(loc, ResumablePrefix) || strings.Contains(loc, links.URLPrefix) {
		t.Errorf("the upload's URL %q: want one of the tus endpoint", loc)
	}
	// The upload's URL alone reaches it, with no credential.
	req, _ := http.NewRequest(http.MethodPatch, loc, strings.NewReader("hello"))
	req.Header.Set("Tus-Resumable", "1.0.0")
	req.Header.Set("Upload-Offset", "0")
	req.Header.Set("Content-Type", "application/offset+octet-stream")
	presp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	presp.Body.Close()
	if presp.StatusCode != http.StatusNoContent {
		t.Errorf("the PATCH of the drop box's upload: %d", presp.StatusCode)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "inbox", "new.txt")); string(b) != "hello" {
		t.Errorf("inbox/new.txt holds %q", b)
	}

	for _, c := range []struct {
		what, base string
		meta       []string
		code       int
	}{
		{"a name taken", drop + dropUploads, []string{"filename", "old.txt"}, http.StatusPreconditionFailed},
		{"a folder below", drop + dropUploads, []string{"filename", "x.txt", "folder", "sub"}, http.StatusForbidden},
		{"a folder out", drop + dropUploads, []string{"filename", "x.txt", "folder", "../private"}, http.StatusBadRequest},
		{"a read link", read + dropUploads, []string{"filename", "x.txt"}, http.StatusForbidden},
	} {
		if resp := create(c.base, 1, c.meta...); resp.StatusCode != c.code {
			t.Errorf("%s: %d; want %d", c.what, resp.StatusCode, c.code)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "inbox", "old.txt")); string(b) != "o" {
		t.Error("a drop box's upload replaced a file")
	}
	id := strings.Split(strings.TrimPrefix(drop, links.URLPrefix), ".")[1]
	if err := f.h.gate.Links().Revoke(context.Background(), id, "", true); err != nil {
		t.Fatal(err)
	}
	if resp := create(drop+dropUploads, 1, "filename", "late.txt"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a creation through a revoked drop box: %d", resp.StatusCode)
	}
}

func TestRebaseFolder(t *testing.T) {
	b := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		meta, root, want string
		err              bool
	}{
		{"filename " + b("a.txt"), "in", "filename " + b("a.txt") + ",folder " + b("in"), false},
		{"filename " + b("a.txt") + ",folder " + b("/sub/"), "in", "filename " + b("a.txt") + ",folder " + b("in/sub"), false},
		{"folder " + b("sub") + ", filename " + b("a.txt"), "", "filename " + b("a.txt") + ",folder " + b("sub"), false},
		{"filename " + b("a.txt"), "", "filename " + b("a.txt"), false},
		{"folder " + b("a/../../b"), "in", "", true},
		{"folder !!!", "in", "", true},
	} {
		got, err := rebaseFolder(c.meta, c.root)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("rebaseFolder(%q, %q) = %q, %v; want %q", c.meta, c.root, got, err, c.want)
		}
	}
}
