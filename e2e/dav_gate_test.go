//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// WebDAV under the gate: locks belong to who took them, requests are
// bounded in the properties they name, locks are shown (lockdiscovery),
// listings hide what the folder page hides, and a share link's answers
// stay in the link's URL space.

const (
	daveToken = "dave-token-0123456789"
	erinToken = "erin-token-0123456789"
)

// twoWriters starts largo with WebDAV on g, where dave and erin may both
// do everything, and seeds shared/doc.txt and shared/other.txt.
func twoWriters(t *testing.T, g *target, extra ...string) *server {
	t.Helper()
	file := writeAccessFile(t, `
[[user]]
name = "dave"
tokens = ["`+daveToken+`"]

[[user]]
name = "erin"
tokens = ["`+erinToken+`"]

[[rule]]
path = "/"
users = ["dave", "erin"]
allow = ["all"]
`)
	g.seed(t, "shared/doc.txt", "dave's")
	g.seed(t, "shared/other.txt", "other")
	args := append([]string{"--upload", "--webdav", "--access", file}, extra...)
	if g.srv == nil {
		return startServer(t, g.dir, args...)
	}
	return startS3Largo(t, g.srv, "", args...)
}

// TestDAVLockHolder: a lock belongs to the user who took it. Another
// user presenting its token is refused as without one by every write
// protocol that reads lock tokens (PUT, a form, DELETE, PROPPATCH, MOVE,
// COPY: 423), and may neither refresh nor remove the lock (403); the
// holder still may do all of it. On a folder and on a bucket.
func TestDAVLockHolder(t *testing.T) { forEachTarget(t, davLockHolder) }

func davLockHolder(t *testing.T, g *target) {
	s := twoWriters(t, g)
	dave := []string{"Authorization", "Bearer " + daveToken}
	erin := []string{"Authorization", "Bearer " + erinToken}
	resp, text := send(t, "LOCK", s.URL+"shared/doc.txt", strings.NewReader(lockBody), int64(len(lockBody)), append([]string{"Depth", "0", "Timeout", "Second-600"}, dave...)...)
	tok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	if resp.StatusCode != 200 || tok == "" {
		t.Fatalf("dave's LOCK: %d %s", resp.StatusCode, text)
	}
	ifTok := []string{"If", "(<" + tok + ">)"}
	patch := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:x xmlns:Z="urn:t">1</Z:x></D:prop></D:set></D:propertyupdate>`
	form, ctype := formBody("doc.txt", strings.NewReader("erin's form"))
	for _, tc := range []struct {
		what, method, path, body string
		hdr                      []string
		code                     int
	}{
		{"PUT", "PUT", "shared/doc.txt", "erin's", ifTok, 423},
		{"form", "POST", "shared/", form.String(), append([]string{"Content-Type", ctype}, ifTok...), 423},
		{"DELETE", "DELETE", "shared/doc.txt", "", ifTok, 423},
		{"PROPPATCH", "PROPPATCH", "shared/doc.txt", patch, ifTok, 423},
		{"MOVE", "MOVE", "shared/doc.txt", "", append([]string{"Destination", s.URL + "shared/moved.txt"}, ifTok...), 423},
		{"COPY onto it", "COPY", "shared/other.txt", "", append([]string{"Destination", s.URL + "shared/doc.txt"}, ifTok...), 423},
		{"LOCK refresh", "LOCK", "shared/doc.txt", "", append([]string{"Timeout", "Second-3600"}, ifTok...), 403},
		{"UNLOCK", "UNLOCK", "shared/doc.txt", "", []string{"Lock-Token", "<" + tok + ">"}, 403},
	} {
		resp, text := send(t, tc.method, s.URL+tc.path, strings.NewReader(tc.body), int64(len(tc.body)), append(tc.hdr, erin...)...)
		if resp.StatusCode != tc.code || strings.Count(strings.TrimSpace(text), "\n") > 0 {
			t.Errorf("erin's %s with dave's token: %d %q; want %d and a one-line reason", tc.what, resp.StatusCode, text, tc.code)
		}
	}
	for _, name := range []string{"shared/doc.txt", "shared/other.txt"} {
		if resp := get(t, s.URL+name, dave...); resp.StatusCode != 200 {
			t.Errorf("%s after erin's tries: %d", name, resp.StatusCode)
		}
	}
	if b, err := os.ReadFile(filepath.Join(g.dir, "shared", "doc.txt")); err != nil || string(b) != "dave's" {
		t.Errorf("doc.txt after erin's tries: %q, %v", b, err)
	}
	// The lock is still dave's: his refresh, PUT and UNLOCK go through.
	for _, tc := range []struct {
		method, body string
		hdr          []string
		code         int
	}{
		{"LOCK", "", append([]string{"Timeout", "Second-600"}, ifTok...), 200},
		{"PUT", "dave's again", ifTok, 204},
		{"UNLOCK", "", []string{"Lock-Token", "<" + tok + ">"}, 204},
	} {
		if resp, text := send(t, tc.method, s.URL+"shared/doc.txt", strings.NewReader(tc.body), int64(len(tc.body)), append(tc.hdr, dave...)...); resp.StatusCode != tc.code {
			t.Errorf("dave's %s with his token: %d %s; want %d", tc.method, resp.StatusCode, text, tc.code)
		}
	}
	if resp, text := put(t, s.URL+"shared/doc.txt", strings.NewReader("erin's"), 6, erin...); resp.StatusCode != 204 {
		t.Errorf("erin's PUT after the UNLOCK: %d %s", resp.StatusCode, text)
	}
	g.clean(t)
}

// TestDAVDropBoxNoDAV: a drop-box link passes no DAV method, not even
// PROPFIND, on a folder and on a bucket.
func TestDAVDropBoxNoDAV(t *testing.T) { forEachTarget(t, davDropBox) }

func davDropBox(t *testing.T, g *target) {
	need(t, "curl")
	s := twoWriters(t, g)
	drop := shareLink(t, g, s, "/shared", "--write")
	for _, args := range [][]string{
		{"-X", "PROPFIND", "-H", "Depth: 1", drop},
		{"-X", "PROPFIND", "-H", "Depth: 0", drop + "doc.txt"},
		{"-X", "LOCK", "--data", lockBody, drop + "new.txt"},
		{"-X", "MKCOL", drop + "d"},
	} {
		if got := curlStatus(t, args...); got != "403" {
			t.Errorf("drop-box link, %v: %s; want 403", args, got)
		}
	}
}

// manyProps is a PROPPATCH body that sets n small properties.
func manyProps(n int) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop>`)
	for i := range n {
		fmt.Fprintf(&b, `<Z:p%05d xmlns:Z="urn:x">v</Z:p%05d>`, i, i)
	}
	b.WriteString(`</D:prop></D:set></D:propertyupdate>`)
	return b.String()
}

// TestDAVPropsBounded: a PROPPATCH of 20,000 small properties (738 KB) is
// refused whole with 413 and a one-line reason, as is a PROPFIND naming
// too many; one of 256 goes through. On a folder and on a bucket.
func TestDAVPropsBounded(t *testing.T) { forEachTarget(t, davPropsBounded) }

func davPropsBounded(t *testing.T, g *target) {
	g.seed(t, "f.txt", "f")
	s := g.serve(t, "--webdav")
	var find strings.Builder
	find.WriteString(`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>`)
	for i := range 300 {
		fmt.Fprintf(&find, `<Z:p%d xmlns:Z="urn:x"/>`, i)
	}
	find.WriteString(`</D:prop></D:propfind>`)
	for _, tc := range []struct {
		what, method, body string
		code               int
	}{
		{"PROPPATCH of 20,000 properties", "PROPPATCH", manyProps(20000), 413},
		{"PROPFIND naming 300", "PROPFIND", find.String(), 413},
		{"PROPPATCH of 256 properties", "PROPPATCH", manyProps(256), 207},
	} {
		resp, text := send(t, tc.method, s.URL+"f.txt", strings.NewReader(tc.body), int64(len(tc.body)), append([]string{"Depth", "0"}, bearer...)...)
		if resp.StatusCode != tc.code || tc.code == 413 && (!strings.Contains(text, "too many properties") || strings.Count(strings.TrimSpace(text), "\n") > 0) {
			t.Errorf("%s: %d %.200q; want %d", tc.what, resp.StatusCode, text, tc.code)
		}
	}
	if resp, text := send(t, "PROPFIND", s.URL+"f.txt", strings.NewReader(manyPropsFind), int64(len(manyPropsFind)), append([]string{"Depth", "0"}, bearer...)...); resp.StatusCode != 207 || !strings.Contains(text, "<p00255") {
		t.Errorf("the 256 properties: %d %.300s", resp.StatusCode, text)
	}
}

const manyPropsFind = `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`

// activeLockRE finds the activelock elements of a PROPFIND's answer.
var activeLockRE = regexp.MustCompile(`<D:activelock[ >].*?</D:activelock>`)

const findLocks = `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:lockdiscovery/></D:prop></D:propfind>`

// TestDAVLockDiscovery: after a LOCK, PROPFIND answers DAV:lockdiscovery
// (RFC 4918, 15.8) with the lock, its token to its holder alone, at the
// file and in its folder's listing; cadaver's discover finds it; after
// UNLOCK it is empty. On a folder and on a bucket.
func TestDAVLockDiscovery(t *testing.T) { forEachTarget(t, davLockDiscovery) }

func davLockDiscovery(t *testing.T, g *target) {
	cadaver := need(t, "cadaver")
	s := twoWriters(t, g)
	dave := []string{"Authorization", "Bearer " + daveToken}
	erin := []string{"Authorization", "Bearer " + erinToken}
	body := strings.Replace(lockBody, "</D:lockinfo>", "<D:owner><D:href>mailto:dave@example.org</D:href></D:owner></D:lockinfo>", 1)
	resp, text := send(t, "LOCK", s.URL+"shared/doc.txt", strings.NewReader(body), int64(len(body)), append([]string{"Depth", "0", "Timeout", "Second-600"}, dave...)...)
	tok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	if resp.StatusCode != 200 || tok == "" {
		t.Fatalf("LOCK: %d %s", resp.StatusCode, text)
	}
	for _, who := range []struct {
		name      string
		hdr       []string
		showToken bool
	}{{"dave", dave, true}, {"erin", erin, false}} {
		for _, depth := range []string{"0", "1"} {
			url := s.URL + "shared/doc.txt"
			if depth == "1" {
				url = s.URL + "shared/"
			}
			resp, text := send(t, "PROPFIND", url, strings.NewReader(findLocks), int64(len(findLocks)), append([]string{"Depth", depth}, who.hdr...)...)
			locks := activeLockRE.FindAllString(text, -1)
			if resp.StatusCode != 207 || len(locks) != 1 {
				t.Fatalf("PROPFIND of Depth %s as %s: %d, %d active locks\n%s", depth, who.name, resp.StatusCode, len(locks), text)
			}
			l := locks[0]
			for _, want := range []string{"<D:depth>0</D:depth>", "<D:lockroot><D:href>/shared/doc.txt</D:href></D:lockroot>", "mailto:dave@example.org", "<D:timeout>Second-"} {
				if !strings.Contains(l, want) {
					t.Errorf("the lock as %s sees it lacks %s:\n%s", who.name, want, l)
				}
			}
			if strings.Contains(l, tok) != who.showToken {
				t.Errorf("the lock as %s sees it: token shown %v; want %v\n%s", who.name, !who.showToken, who.showToken, l)
			}
		}
	}
	out := runCadaver(t, cadaver, s.URL+"shared/", "dave", daveToken, "discover doc.txt\nquit\n")
	if !strings.Contains(out, tok) || !strings.Contains(out, "exclusive") {
		t.Errorf("cadaver's discover does not find dave's lock:\n%s", out)
	}
	if resp, _ := send(t, "UNLOCK", s.URL+"shared/doc.txt", nil, 0, append([]string{"Lock-Token", "<" + tok + ">"}, dave...)...); resp.StatusCode != 204 {
		t.Fatalf("UNLOCK: %d", resp.StatusCode)
	}
	resp, text = send(t, "PROPFIND", s.URL+"shared/doc.txt", strings.NewReader(findLocks), int64(len(findLocks)), append([]string{"Depth", "0"}, dave...)...)
	if resp.StatusCode != 207 || !strings.Contains(text, "<D:lockdiscovery></D:lockdiscovery>") {
		t.Errorf("lockdiscovery after UNLOCK: %d\n%s\nwant it found, empty", resp.StatusCode, text)
	}
}

// runCadaver runs cadaver on url with script as its input, signed in as
// user with password, and returns what it printed.
func runCadaver(t *testing.T, cadaver, url, user, password, script string) string {
	t.Helper()
	home := t.TempDir()
	if user != "" {
		if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine 127.0.0.1 login "+user+" password "+password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(cadaver, url)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stdin = strings.NewReader(script)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cadaver: %v\n%s", err, out)
	}
	return string(out)
}

// runRclone runs cmd, an rclone command given its remote on the command
// line, without a config file, and returns its standard output.
func runRclone(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	cmd.Env = append(os.Environ(), "RCLONE_CONFIG="+filepath.Join(t.TempDir(), "none.conf"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", strings.Join(cmd.Args, " "), err, out, stderr.String())
	}
	return string(out)
}

// hrefRE finds the hrefs of a PROPFIND's answer.
var hrefRE = regexp.MustCompile(`<D:response><D:href>([^<]*)</D:href>`)

func responseHrefs(text string) []string {
	var out []string
	for _, m := range hrefRE.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// TestDAVHidesSidecars: the sidecars largo precompress wrote are left out
// of a PROPFIND of Depth 1 as they are out of the folder's listings, so
// that a mounted drive (rclone here) does not copy them; a file of the
// same form that is no sidecar of largo's stays. On a folder and on a
// bucket.
func TestDAVHidesSidecars(t *testing.T) { forEachTarget(t, davHidesSidecars) }

func davHidesSidecars(t *testing.T, g *target) {
	rclone := need(t, "rclone")
	log := strings.Repeat("GET /index.html 200 1024\n", 400)
	g.seed(t, "site/app.log", log)
	g.seed(t, "site/backup.tar.gz", "not a sidecar")
	args := []string{"precompress", g.dir}
	var env []string
	if g.srv != nil {
		args, env = []string{"precompress", "--store", "s3://" + g.srv.Bucket + "/"}, g.srv.Env()
	}
	if code, out, stderr := runLargo(t, env, args...); code != 0 || !strings.Contains(out, "3 sidecars written") {
		t.Fatalf("precompress: exit %d\n%s\n%s", code, out, stderr)
	}
	s := g.serve(t, "--webdav")
	want := []string{"/site/", "/site/app.log", "/site/backup.tar.gz"}
	resp, text := send(t, "PROPFIND", s.URL+"site/", nil, 0, append([]string{"Depth", "1"}, bearer...)...)
	if got := responseHrefs(text); resp.StatusCode != 207 || !slices.Equal(got, want) {
		t.Errorf("PROPFIND of Depth 1: %d %q; want %q", resp.StatusCode, got, want)
	}
	if _, listing := send(t, "GET", s.URL+"site/?format=json", nil, 0, bearer...); strings.Contains(listing, "app.log.") || !strings.Contains(listing, "backup.tar.gz") {
		t.Errorf("the JSON listing, which PROPFIND should agree with:\n%s", listing)
	}
	cmd := exec.Command(rclone, "lsf", ":webdav:site", "--webdav-url", s.URL, "--webdav-vendor", "other", "--webdav-bearer-token", testToken)
	if got := strings.Fields(runRclone(t, cmd)); !slices.Equal(got, []string{"app.log", "backup.tar.gz"}) {
		t.Errorf("rclone lsf: %q; want app.log and backup.tar.gz", got)
	}
}

// TestDAVShareLinkNames: through a read link everything is named in the
// link's URL space: PROPFIND's hrefs are below the link's URL and never
// name the path it stands for; rclone lists and copies the link's files,
// cadaver lists and gets them; a file link names its file at its URL. On
// a folder and on a bucket.
func TestDAVShareLinkNames(t *testing.T) { forEachTarget(t, davShareLinkNames) }

func davShareLinkNames(t *testing.T, g *target) {
	rclone := need(t, "rclone")
	cadaver := need(t, "cadaver")
	s := twoWriters(t, g)
	files := map[string]string{"private/deep/d.txt": "deep d", "private/deep/sub/e f.txt": "deeper e", "private/top.txt": "top"}
	for name, content := range files {
		g.seed(t, name, content)
	}
	link := shareLink(t, g, s, "/private/deep")
	base := strings.TrimPrefix(link, strings.TrimSuffix(s.URL, "/"))
	if !strings.HasPrefix(base, "/_largo/s/") || !strings.HasSuffix(base, "/") {
		t.Fatalf("link %s", link)
	}
	resp, text := send(t, "PROPFIND", link, nil, 0, "Depth", "1")
	if got, want := responseHrefs(text), []string{base, base + "d.txt", base + "sub/"}; resp.StatusCode != 207 || !slices.Equal(got, want) {
		t.Errorf("PROPFIND of Depth 1 through the link: %d %q; want %q", resp.StatusCode, got, want)
	}
	if strings.Contains(text, "private") {
		t.Errorf("the link's answer names the path it stands for:\n%s", text)
	}
	resp, text = send(t, "PROPFIND", link+"sub/", nil, 0, "Depth", "1")
	if got, want := responseHrefs(text), []string{base + "sub/", base + "sub/e%20f.txt"}; resp.StatusCode != 207 || !slices.Equal(got, want) {
		t.Errorf("PROPFIND of a folder below the link: %d %q; want %q", resp.StatusCode, got, want)
	}

	rc := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(rclone, append(args, "--webdav-url", link, "--webdav-vendor", "other")...)
		return runRclone(t, cmd)
	}
	if got := strings.Split(strings.TrimSpace(rc("lsf", "-R", ":webdav:")), "\n"); !slices.Equal(got, []string{"d.txt", "sub/", "sub/e f.txt"}) {
		t.Errorf("rclone lsf -R through the link: %q", got)
	}
	back := t.TempDir()
	rc("copy", ":webdav:", back)
	for name, want := range map[string]string{"d.txt": "deep d", "sub/e f.txt": "deeper e"} {
		if b, err := os.ReadFile(filepath.Join(back, filepath.FromSlash(name))); err != nil || string(b) != want {
			t.Errorf("rclone copy through the link: %s is %q, %v; want %q", name, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(back, "top.txt")); err == nil {
		t.Error("rclone copied a file above the link")
	}

	dir := t.TempDir()
	out := runCadaver(t, cadaver, link, "", "", fmt.Sprintf("ls\ncd sub\nget \"e f.txt\" %s\nquit\n", filepath.Join(dir, "e.txt")))
	if !strings.Contains(out, "d.txt") || !strings.Contains(out, "sub") || strings.Contains(out, "private") {
		t.Errorf("cadaver's listing through the link:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "e.txt")); err != nil || string(b) != "deeper e" {
		t.Errorf("cadaver's get through the link: %q, %v\n%s", b, err, out)
	}

	fileLink := shareLink(t, g, s, "/private/deep/d.txt")
	resp, text = send(t, "PROPFIND", fileLink, nil, 0, "Depth", "0")
	fileBase := strings.TrimPrefix(fileLink, strings.TrimSuffix(s.URL, "/"))
	if got := responseHrefs(text); resp.StatusCode != 207 || !slices.Equal(got, []string{fileBase}) || strings.Contains(text, "private") {
		t.Errorf("PROPFIND of a file link: %d %q; want %q\n%s", resp.StatusCode, got, fileBase, text)
	}
}
