package pageapi

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// TestSelection: some entries of a folder as one archive, each read as
// its requester may read it.
func TestSelection(t *testing.T) {
	f := newAccessFixture(t)
	q := url.Values{"dir": {"/private/"}, "format": {"zip"}, "name": {"s.txt", "deep", "s.txt"}}
	rec := f.post(SelectionPath, "alice", q.Encode())
	if rec.Code != 200 || rec.Header().Get("Content-Disposition") != `attachment; filename=private.zip` {
		t.Fatalf("zip: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	zr, err := zip.NewReader(bytes.NewReader(rec.Body.Bytes()), int64(rec.Body.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, zf := range zr.File {
		names = append(names, zf.Name)
	}
	if want := []string{"private/", "private/deep/", "private/deep/t.txt", "private/s.txt"}; !slices.Equal(names, want) {
		t.Errorf("zip holds %q; want %q", names, want)
	}

	// GET, a tar of the root, as anonymous.
	rec = f.get(SelectionPath+"?"+url.Values{"dir": {"/"}, "format": {"tar"}, "name": {"pub"}}.Encode(), "")
	if rec.Code != 200 {
		t.Fatalf("tar: %d %s", rec.Code, rec.Body.String())
	}
	tr := tar.NewReader(rec.Body)
	names = nil
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	if want := []string{"files/", "files/pub/", "files/pub/a.txt", "files/pub/unlisted/"}; !slices.Equal(names, want) {
		t.Errorf("tar holds %q; want %q", names, want)
	}

	for _, tt := range []struct {
		user  string
		query url.Values
		code  int
	}{
		{"", url.Values{"dir": {"/private/"}, "format": {"zip"}, "name": {"s.txt"}}, 401},
		{"bob", url.Values{"dir": {"/private/"}, "format": {"zip"}, "name": {"s.txt"}}, 403},
		{"", url.Values{"dir": {"/pub/"}, "format": {"zip"}, "name": {"hidden.txt"}}, 401},
		{"alice", url.Values{"dir": {"/private/"}, "format": {"zip"}, "name": {"nope"}}, 404},
		{"alice", url.Values{"dir": {"/private/"}, "format": {"zip"}, "name": {"deep/t.txt"}}, 400},
		{"alice", url.Values{"dir": {"/private/"}, "format": {"zip"}, "name": {".."}}, 400},
		{"alice", url.Values{"dir": {"/private/"}, "format": {"zip"}, "name": {".hidden"}}, 404},
		{"alice", url.Values{"dir": {"/private/"}, "format": {"rar"}, "name": {"s.txt"}}, 400},
		{"alice", url.Values{"dir": {"/private/"}, "format": {"zip"}}, 400},
		{"alice", url.Values{"dir": {"/private/s.txt"}, "format": {"tar"}, "name": {"x"}}, 404}, // a file is no folder
	} {
		if rec := f.post(SelectionPath, tt.user, tt.query.Encode()); rec.Code != tt.code {
			t.Errorf("%s as %q: %d %s; want %d", tt.query.Encode(), tt.user, rec.Code, strings.TrimSpace(rec.Body.String()), tt.code)
		}
	}
}
