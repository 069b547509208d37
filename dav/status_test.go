package dav

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"largo/ingest"
)

const lockBody = `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`

// TestStatuses: the changes the library would answer with a status of
// its own (500, 403) are answered with the pipeline's status and reason.
func TestStatuses(t *testing.T) {
	for _, tc := range []struct {
		what           string
		cfg            ingest.Config
		method, path   string
		body           string
		hdr            []string
		code           int
		reason         string
		mustNotBeThere string
	}{
		{"COPY past the size limit", ingest.Config{MaxSize: 50}, "COPY", "/big.bin", "", []string{"Destination", "/big2.bin"}, 413, "too large", "big2.bin"},
		{"COPY out of space", ingest.Config{Reserve: 1 << 62}, "COPY", "/big.bin", "", []string{"Destination", "/big2.bin"}, 507, "insufficient storage", "big2.bin"},
		{"MOVE out of space", ingest.Config{Reserve: 1 << 62}, "MOVE", "/big.bin", "", []string{"Destination", "/sub/new.bin"}, 0, "", ""},
		{"MOVE over a file, no Overwrite", ingest.Config{}, "MOVE", "/a.txt", "", []string{"Destination", "/big.bin"}, 204, "", "a.txt"},
		{"MOVE over a file, Overwrite: F", ingest.Config{}, "MOVE", "/a.txt", "", []string{"Destination", "/big.bin", "Overwrite", "F"}, 412, "", ""},
		{"COPY of a folder past the size limit", ingest.Config{MaxSize: 50}, "COPY", "/sub", "", []string{"Destination", "/sub2"}, 413, "too large", "sub2/big.bin"},
		{"LOCK in a missing folder", ingest.Config{}, "LOCK", "/missing/new.txt", lockBody, nil, 409, "folder does not exist", "missing"},
		{"LOCK under a file", ingest.Config{}, "LOCK", "/a.txt/new.txt", lockBody, nil, 409, "a parent is a file", ""},
		{"MOVE into a missing folder", ingest.Config{}, "MOVE", "/a.txt", "", []string{"Destination", "/missing/a.txt"}, 409, "folder does not exist", "missing"},
		{"COPY into a missing folder", ingest.Config{}, "COPY", "/a.txt", "", []string{"Destination", "/missing/a.txt"}, 409, "", "missing"},
		{"MOVE of a folder into a missing folder", ingest.Config{}, "MOVE", "/sub", "", []string{"Destination", "/missing/sub"}, 409, "folder does not exist", "missing"},
		{"LOCK with an owner too long", ingest.Config{}, "LOCK", "/a.txt", strings.Replace(lockBody, "</D:lockinfo>", "<D:owner>"+strings.Repeat("o", MaxOwner+1)+"</D:owner></D:lockinfo>", 1), nil, 400, "lock owner too long", ""},
		{"MOVE of a missing file", ingest.Config{}, "MOVE", "/gone.txt", "", []string{"Destination", "/b.txt"}, 404, "not found", "b.txt"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			dir := t.TempDir()
			big := strings.Repeat("x", 100)
			for name, data := range map[string]string{"a.txt": "a", "big.bin": big, "sub/big.bin": big} {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			srv, _, _ := newServerWith(t, dir, tc.cfg)
			code, body := do(t, tc.method, srv.URL+tc.path, tc.body, tc.hdr...)
			if tc.code == 0 {
				// A MOVE within a folder is a rename: no space needed.
				if code != 201 {
					t.Errorf("%s %s = %d %q; want 201", tc.method, tc.path, code, body)
				}
				return
			}
			if code != tc.code || !strings.Contains(body, tc.reason) || strings.Count(strings.TrimSpace(body), "\n") > 0 {
				t.Errorf("%s %s = %d %q; want %d and one line with %q", tc.method, tc.path, code, body, tc.code, tc.reason)
			}
			if tc.mustNotBeThere != "" {
				if _, err := os.Stat(filepath.Join(dir, tc.mustNotBeThere)); err == nil {
					t.Errorf("%s is there", tc.mustNotBeThere)
				}
			}
		})
	}
}

// TestMoveOfNothing: a MOVE whose source is missing is 404 and leaves
// what is at its destination alone (the library would remove it first).
func TestMoveOfNothing(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("keep"), 0o644)
	srv, _, _ := newServer(t, dir)
	for _, hdr := range [][]string{{"Destination", "/a.txt"}, {"Destination", "/a.txt", "Overwrite", "T"}} {
		if code, body := do(t, "MOVE", srv.URL+"/gone.txt", "", hdr...); code != 404 || body != "not found\n" {
			t.Errorf("MOVE of a missing file %v: %d %q; want 404", hdr, code, body)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "keep" {
			t.Fatalf("the destination after %v: %q, %v; want it kept", hdr, b, err)
		}
	}
}

// TestReplaceKeepsOnFailure: a COPY of a file onto a file that fails
// (past the size limit) leaves the old file; one that succeeds replaces
// it; a MOVE onto a file replaces it too.
func TestReplaceKeepsOnFailure(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"big.bin": strings.Repeat("x", 100), "small.txt": "s", "old.txt": "old", "old2.txt": "old2"} {
		os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644)
	}
	srv, _, _ := newServerWith(t, dir, ingest.Config{MaxSize: 50})
	if code, body := do(t, "COPY", srv.URL+"/big.bin", "", "Destination", "/old.txt"); code != 413 {
		t.Errorf("COPY past the limit onto a file: %d %q; want 413", code, body)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "old.txt")); err != nil || string(b) != "old" {
		t.Errorf("old.txt after the failed COPY: %q, %v; want it kept", b, err)
	}
	if code, body := do(t, "COPY", srv.URL+"/small.txt", "", "Destination", "/old.txt"); code != 204 {
		t.Errorf("COPY onto a file: %d %q; want 204", code, body)
	}
	if code, body := do(t, "MOVE", srv.URL+"/small.txt", "", "Destination", "/old2.txt"); code != 204 {
		t.Errorf("MOVE onto a file: %d %q; want 204", code, body)
	}
	for name, want := range map[string]string{"old.txt": "s", "old2.txt": "s"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "small.txt")); err == nil {
		t.Error("small.txt is still there after its MOVE")
	}
}

// TestUnlockScope: UNLOCK and a refresh at a name the lock does not hold
// fail (409, 412) and leave the lock as it was (RFC 4918, 9.10.2, 9.11.1).
func TestUnlockScope(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.txt", "b.txt", "sub/c.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644)
	}
	srv, _, _ := newServer(t, dir)
	lock := func(p, depth string) string {
		t.Helper()
		req, _ := http.NewRequest("LOCK", srv.URL+p, strings.NewReader(lockBody))
		req.Header.Set("Depth", depth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
		if resp.StatusCode != 200 || tok == "" {
			t.Fatalf("LOCK %s: %d, token %q", p, resp.StatusCode, tok)
		}
		return tok
	}
	tok := lock("/a.txt", "0")
	if code, body := do(t, "UNLOCK", srv.URL+"/b.txt", "", "Lock-Token", "<"+tok+">"); code != 409 {
		t.Errorf("UNLOCK at another name: %d %q; want 409", code, body)
	}
	if code, body := do(t, "LOCK", srv.URL+"/b.txt", "", "If", "(<"+tok+">)"); code != 412 {
		t.Errorf("refresh at another name: %d %q; want 412", code, body)
	}
	if code, body := do(t, "LOCK", srv.URL+"/a.txt", "", "If", "(<"+tok+">)", "Timeout", "Second-60"); code != 200 {
		t.Errorf("refresh at the lock's name: %d %q; want 200 (the lock must be there still)", code, body)
	}
	if code, body := do(t, "UNLOCK", srv.URL+"/a.txt", "", "Lock-Token", "<"+tok+">"); code != 204 {
		t.Errorf("UNLOCK at the lock's name: %d %q; want 204", code, body)
	}
	// The locks the library takes at a COPY's destination go with it.
	for range 2 {
		if code, body := do(t, "COPY", srv.URL+"/a.txt", "", "Destination", "/copy.txt"); code != 201 && code != 204 {
			t.Errorf("COPY: %d %q; want 201 then 204", code, body)
		}
	}
	// A folder's lock of Depth infinity holds the names below it.
	tok = lock("/sub", "infinity")
	if code, body := do(t, "UNLOCK", srv.URL+"/sub/c.txt", "", "Lock-Token", "<"+tok+">"); code != 204 {
		t.Errorf("UNLOCK below the locked folder: %d %q; want 204", code, body)
	}
}
