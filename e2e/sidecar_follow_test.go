//go:build e2e

package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/encode"
	"largo/record"
)

// followAccess is the access file of the tests of sidecars that follow
// their file: upAccess, and the file /tmp/notes.txt (and only it: not
// its sidecars) expires after followTTL.
const followAccess = upAccess + `
[[expire]]
path = "/tmp/notes.txt"
after = "8s"
`

// followTTL is how long a file lives in the expiry test: long enough for
// largo precompress to write its sidecars first.
const followTTL = 8 * time.Second

// textOf is a text file's content, named by seed, large enough to be
// compressed.
func textOf(seed string) string { return strings.Repeat(seed+": a line of text\n", 200) }

// gzipOf is s compressed with gzip.
func gzipOf(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	io.WriteString(zw, s)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// precompress runs largo precompress on all of g's folder or bucket.
func (g *target) precompress(t *testing.T, args ...string) {
	t.Helper()
	var env []string
	args = append([]string{"precompress"}, args...)
	if g.srv == nil {
		args = append(args, g.dir)
	} else {
		args = append(args, "--store", "s3://"+g.srv.Bucket+"/")
		env = g.srv.Env()
	}
	if code, out, stderr := runLargo(t, env, args...); code != 0 {
		t.Fatalf("largo %v: exit %d\n%s%s", args, code, out, stderr)
	}
}

// sidecarsOf returns the names of name's sidecars in every coding.
func sidecarsOf(name string) []string {
	var out []string
	for _, c := range encode.Codings {
		out = append(out, encode.Sidecar(name, c))
	}
	return out
}

// records counts the records of sidecars largo wrote in g's state area:
// the records of files (record.File) that name a sidecar's source.
func (g *target) records(t *testing.T) int {
	t.Helper()
	n := 0
	for _, rec := range fileRecords(t, g.dir) {
		if rec.Source != "" {
			n++
		}
	}
	return n
}

// fileRecords reads the records of files in the state area of the
// folder dir (a bucket's, through versitygw's folder).
func fileRecords(t testing.TB, dir string) []record.File {
	t.Helper()
	p := filepath.Join(dir, ".largo", "files")
	ents, err := os.ReadDir(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []record.File
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(p, e.Name()))
		if err != nil {
			continue // removed meanwhile
		}
		var rec record.File
		if json.Unmarshal(b, &rec) == nil {
			out = append(out, rec)
		}
	}
	return out
}

// sentAsIs fails the test unless url answers a client that takes every
// coding with want's bytes as they are: no sidecar stands for it.
func sentAsIs(t *testing.T, what, url, want string) {
	t.Helper()
	for _, c := range []string{"gzip", "br", "zstd"} {
		resp := get(t, url, "Accept-Encoding", c)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "" || string(b) != want {
			t.Errorf("%s, asked for %s: %d, Content-Encoding %q, %d bytes (%.40q); want its own %d bytes as they are",
				what, c, resp.StatusCode, resp.Header.Get("Content-Encoding"), len(b), b, len(want))
		}
	}
}

// sentEncoded fails the test unless url answers each coding with its
// sidecar.
func sentEncoded(t *testing.T, url string) {
	t.Helper()
	for _, c := range encode.Codings {
		resp := get(t, url, "Accept-Encoding", string(c))
		if resp.Header.Get("Content-Encoding") != string(c) {
			t.Errorf("%s for %s: %d, Content-Encoding %q; want its sidecar", url, c, resp.StatusCode, resp.Header.Get("Content-Encoding"))
		}
	}
}

// gone fails the test while any of names is in g's folder or bucket.
func (g *target) gone(t *testing.T, why string, names ...string) {
	t.Helper()
	for _, n := range names {
		if g.exists(n) {
			t.Errorf("%s: %s is still there", why, n)
		}
	}
}

// pageMove moves from to to by the page's move (URL paths).
func pageMove(t *testing.T, s *server, from, to string) {
	t.Helper()
	form := "from=" + from + "&to=" + to
	resp, body := send(t, "POST", s.URL+"_largo/move", strings.NewReader(form), int64(len(form)),
		append(bearer, "Content-Type", "application/x-www-form-urlencoded", "Origin", strings.TrimSuffix(s.URL, "/"))...)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("the page's move of %s to %s: %s %s", from, to, resp.Status, body)
	}
}

// davMove moves (or with method COPY copies) from to to by WebDAV,
// replacing what is there.
func davMove(t *testing.T, s *server, method, from, to string) {
	t.Helper()
	resp, body := send(t, method, s.URL+from, nil, 0, append(bearer, "Destination", s.URL+to)...)
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
		t.Fatalf("WebDAV %s of %s to %s: %s %s", method, from, to, resp.Status, body)
	}
}

// put writes body to name as up.
func putText(t *testing.T, s *server, name, body string) {
	t.Helper()
	if resp, b := send(t, "PUT", s.URL+name, strings.NewReader(body), int64(len(body)), bearer...); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s: %s %s", name, resp.Status, b)
	}
}

// TestDropBoxSidecar: with --sidecars any a drop box cannot put what
// would be sent as another file's encoding. NAME.gz, NAME.br, NAME.zst
// beside NAME are refused (409, and the reason says why) by a PUT and by
// a form, and NAME's clients get NAME. A lone NAME.gz it may upload (no
// NAME is there) is never sent as the encoding of a NAME that comes
// later: written at once (in the same second, on a bucket), or moved
// onto it by the page or by WebDAV (keeping an older time, on a folder).
// On a folder and on a bucket.
func TestDropBoxSidecar(t *testing.T) { forEachTarget(t, dropBoxSidecar) }

func dropBoxSidecar(t *testing.T, g *target) {
	access := writeAccessFile(t, followAccess)
	report, draft, draft2, notes := textOf("report"), textOf("draft"), textOf("draft2"), textOf("notes")
	g.seed(t, "inbox/report.txt", report)
	g.seed(t, "inbox/draft.txt", draft)
	g.seed(t, "inbox/draft2.txt", draft2)
	if g.srv == nil {
		old := time.Now().Add(-time.Hour)
		for _, n := range []string{"draft.txt", "draft2.txt"} {
			os.Chtimes(filepath.Join(g.dir, "inbox", n), old, old)
		}
	}
	s := startServerOn(t, g, "--access", access, "--webdav", "--sidecars", "any", "--compress", "off")
	link := dropLink(t, g, s, access, "up", "inbox")
	stranger := gzipOf(t, "a stranger's text, not the report\n")

	for _, name := range sidecarsOf("report.txt") {
		resp, body := send(t, "PUT", link+name, bytes.NewReader(stranger), int64(len(stranger)))
		if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "compressed form") {
			t.Errorf("a drop box's PUT of %s beside report.txt: %s %q; want 409 saying it would be taken for the file's compressed form", name, resp.Status, body)
		}
	}
	src := filepath.Join(t.TempDir(), "report.txt.gz")
	if err := os.WriteFile(src, stranger, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := curlStatus(t, "-F", "file=@"+src, link); code != "409" {
		t.Errorf("a drop box's form with report.txt.gz beside report.txt: %s; want 409", code)
	}
	g.gone(t, "refused", sidecarsOf("inbox/report.txt")...)
	sentAsIs(t, "report.txt beside the drop box's refusals", s.URL+"inbox/report.txt", report)

	// Lone ones are files like any other, until a NAME comes.
	for _, name := range []string{"notes.txt.gz", "memo.txt.gz", "plan.txt.gz"} {
		if resp, body := send(t, "PUT", link+name, bytes.NewReader(stranger), int64(len(stranger))); resp.StatusCode != http.StatusCreated {
			t.Fatalf("a drop box's lone %s: %s %s", name, resp.Status, body)
		}
	}
	putText(t, s, "inbox/notes.txt", notes)
	pageMove(t, s, "/inbox/draft.txt", "/inbox/memo.txt")
	davMove(t, s, "MOVE", "inbox/draft2.txt", "inbox/plan.txt")
	sentAsIs(t, "notes.txt written after a drop box's notes.txt.gz", s.URL+"inbox/notes.txt", notes)
	sentAsIs(t, "memo.txt moved by the page onto a drop box's memo.txt.gz", s.URL+"inbox/memo.txt", draft)
	sentAsIs(t, "plan.txt moved by WebDAV onto a drop box's plan.txt.gz", s.URL+"inbox/plan.txt", draft2)
}

// TestSidecarsExpire: the precompressed sidecars of a file that expires,
// by a drop box's --file-ttl or by an [[expire]] table that names the
// file alone, go with it, records and all: nothing of the expired
// content stays readable. On a folder and on a bucket.
func TestSidecarsExpire(t *testing.T) { forEachTarget(t, sidecarsExpire) }

func sidecarsExpire(t *testing.T, g *target) {
	access := writeAccessFile(t, followAccess)
	g.seed(t, "drop/seed.bin", "the folder")
	out := g.share(t, access, "--write", "--file-ttl", "8s", "--url", "http://x", "drop")
	s := startServerOn(t, g, "--access", access, "--expiry-sweep", "300ms", "--compress", "off")
	link := s.URL + strings.TrimPrefix(strings.TrimSpace(out), "http://x/")

	page, notes := textOf("page"), textOf("notes")
	if resp, body := send(t, "PUT", link+"page.txt", strings.NewReader(page), int64(len(page))); resp.StatusCode != http.StatusCreated {
		t.Fatalf("the drop box's page.txt: %s %s", resp.Status, body)
	}
	putText(t, s, "tmp/notes.txt", notes)
	landed := time.Now()
	g.precompress(t)
	files := []string{"drop/page.txt", "tmp/notes.txt"}
	for _, f := range files {
		sentEncoded(t, s.URL+f)
	}
	if g.records(t) != 6 {
		t.Errorf("%d sidecar records; want 6", g.records(t))
	}
	if time.Since(landed) >= followTTL {
		t.Fatalf("largo precompress took %v, past the files' time to live", time.Since(landed))
	}

	if !waitFor(followTTL+20*time.Second, func() bool { return !g.exists(files[0]) && !g.exists(files[1]) }) {
		t.Fatalf("the files still there %v after they landed", time.Since(landed))
	}
	var sides []string
	for _, f := range files {
		sides = append(sides, sidecarsOf(f)...)
	}
	// The sidecars go in the sweep that removes their file, a moment
	// after it.
	waitFor(5*time.Second, func() bool {
		for _, n := range sides {
			if g.exists(n) {
				return false
			}
		}
		return true
	})
	g.gone(t, "the file expired", sides...)
	for _, n := range sides {
		if resp := get(t, s.URL+n); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s after its file expired: %d; want 404", n, resp.StatusCode)
		}
	}
	if n := g.records(t); n != 0 {
		t.Errorf("%d sidecar records left after their sidecars went", n)
	}
}

// TestSidecarsFollowTheirFile: the sidecars largo precompress wrote for
// a file go with it when it is deleted, moved by the page or by WebDAV,
// or replaced by a PUT, a WebDAV COPY or an upload of the IETF protocol:
// nothing stale is sent nor left, records included. A file of its own
// under a sidecar's name stays. A folder moved takes its files' sidecars
// along, still sent for them. On a folder and on a bucket.
func TestSidecarsFollowTheirFile(t *testing.T) { forEachTarget(t, sidecarsFollow) }

func sidecarsFollow(t *testing.T, g *target) {
	access := writeAccessFile(t, followAccess)
	names := []string{"a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "f.txt", "own.txt"}
	for _, n := range names {
		g.seed(t, "w/"+n, textOf(n))
	}
	mine := gzipOf(t, "a file of its own\n")
	g.seed(t, "w/own.txt.gz", string(mine))
	g.seed(t, "w/dir/z.txt", textOf("z"))
	g.precompress(t)
	s := startServerOn(t, g, "--access", access, "--webdav", "--compress", "off")
	for _, n := range names {
		if n != "own.txt" {
			sentEncoded(t, s.URL+"w/"+n)
		}
	}

	if resp, body := send(t, "DELETE", s.URL+"w/a.txt", nil, 0, bearer...); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE w/a.txt: %s %s", resp.Status, body)
	}
	g.gone(t, "DELETE of its file", sidecarsOf("w/a.txt")...)
	pageMove(t, s, "/w/b.txt", "/w/b2.txt")
	g.gone(t, "the page's move of its file", sidecarsOf("w/b.txt")...)
	davMove(t, s, "MOVE", "w/c.txt", "w/c2.txt")
	g.gone(t, "WebDAV MOVE of its file", sidecarsOf("w/c.txt")...)
	sentAsIs(t, "b2.txt, moved by the page", s.URL+"w/b2.txt", textOf("b.txt"))
	sentAsIs(t, "c2.txt, moved by WebDAV", s.URL+"w/c2.txt", textOf("c.txt"))

	putText(t, s, "w/d.txt", textOf("new d"))
	g.gone(t, "a PUT replaced its file", sidecarsOf("w/d.txt")...)
	sentAsIs(t, "d.txt replaced by a PUT", s.URL+"w/d.txt", textOf("new d"))
	davMove(t, s, "COPY", "w/b2.txt", "w/e.txt")
	g.gone(t, "a WebDAV COPY replaced its file", sidecarsOf("w/e.txt")...)
	sentAsIs(t, "e.txt replaced by a WebDAV COPY", s.URL+"w/e.txt", textOf("b.txt"))
	src := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(src, []byte(textOf("new f")), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runLargo(t, []string{"LARGO_TOKEN=" + testToken}, "put", "--protocol", "ietf", "-q", src, s.URL+"w/f.txt"); code != 0 {
		t.Fatalf("largo put: exit %d\n%s\n%s", code, out, stderr)
	}
	g.gone(t, "an IETF upload replaced its file", sidecarsOf("w/f.txt")...)
	sentAsIs(t, "f.txt replaced by an IETF upload", s.URL+"w/f.txt", textOf("new f"))

	if resp, body := send(t, "DELETE", s.URL+"w/own.txt", nil, 0, bearer...); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE w/own.txt: %s %s", resp.Status, body)
	}
	g.gone(t, "DELETE of its file", "w/own.txt.br", "w/own.txt.zst")
	if b, err := os.ReadFile(filepath.Join(g.dir, "w", "own.txt.gz")); err != nil || !bytes.Equal(b, mine) {
		t.Errorf("own.txt.gz, a file of its own, after DELETE of own.txt: %v", err)
	}
	davMove(t, s, "MOVE", "w/dir/", "w/dir2/")
	sentEncoded(t, s.URL+"w/dir2/z.txt")
	if l := listed(t, s.URL+"w/dir2/"); len(l) != 1 {
		t.Errorf("the folder moved lists %v; want z.txt alone, its sidecars hidden", l)
	}
	if n := g.records(t); n != 3 {
		t.Errorf("%d sidecar records; want those of the folder moved alone", n)
	}
}

// TestAnySidecarsFollowTheirFile: with --sidecars any, the hand-made
// sidecars the server sends for a file go with it when it is deleted or
// replaced (a PUT, a WebDAV MOVE onto it of a file with an older time):
// none written before a version is sent as its encoding. One older than
// its file, never sent, stays. On a folder and on a bucket.
func TestAnySidecarsFollowTheirFile(t *testing.T) { forEachTarget(t, anySidecarsFollow) }

func anySidecarsFollow(t *testing.T, g *target) {
	access := writeAccessFile(t, followAccess)
	g.seed(t, "w/old.txt", textOf("old"))
	if g.srv == nil {
		old := time.Now().Add(-time.Hour)
		os.Chtimes(filepath.Join(g.dir, "w", "old.txt"), old, old)
	}
	s := startServerOn(t, g, "--access", access, "--webdav", "--sidecars", "any", "--compress", "off")
	for _, n := range []string{"g.txt", "h.txt", "j.txt"} {
		putText(t, s, "w/"+n, textOf(n))
		putText(t, s, "w/"+n+".gz", string(gzipOf(t, textOf(n))))
		if resp := get(t, s.URL+"w/"+n, "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("w/%s.gz, written after w/%s, is not sent as its encoding: %v", n, n, resp.Header)
		}
	}

	davMove(t, s, "MOVE", "w/old.txt", "w/g.txt")
	sentAsIs(t, "g.txt, an older file moved onto it by WebDAV", s.URL+"w/g.txt", textOf("old"))
	g.gone(t, "WebDAV MOVE onto its file", "w/g.txt.gz")
	if resp, body := send(t, "DELETE", s.URL+"w/h.txt", nil, 0, bearer...); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE w/h.txt: %s %s", resp.Status, body)
	}
	g.gone(t, "DELETE of its file", "w/h.txt.gz")
	putText(t, s, "w/j.txt", textOf("new j"))
	sentAsIs(t, "j.txt replaced by a PUT", s.URL+"w/j.txt", textOf("new j"))
	g.gone(t, "a PUT replaced its file", "w/j.txt.gz")

	if g.srv == nil {
		// An older k.txt.gz was never k.txt's encoding: a file of its own.
		putText(t, s, "w/k.txt.gz", "an older file of its own")
		putText(t, s, "w/k.txt", textOf("k"))
		old := time.Now().Add(-time.Hour)
		os.Chtimes(filepath.Join(g.dir, "w", "k.txt.gz"), old, old)
		if resp, body := send(t, "DELETE", s.URL+"w/k.txt", nil, 0, bearer...); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("DELETE w/k.txt: %s %s", resp.Status, body)
		}
		if !g.exists("w/k.txt.gz") {
			t.Error("k.txt.gz, older than k.txt and never sent for it, was removed with it")
		}
	}
}
