//go:build e2e

package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"largo/internal/testenv"
	"largo/s3/s3test"
)

// litmusAccepted are the litmus tests that fail against largo for a
// reason docs/webdav.md gives: the protocol library's (shared locks,
// a namespace check, If headers with entity tags on largo's own PUT).
var litmusAccepted = map[string]string{
	"propfind_invalid2":     "golang.org/x/net/webdav accepts an undeclared namespace prefix in a PROPFIND body",
	"fail_complex_cond_put": "largo's PUT reads the lock tokens of an If header, not its entity tags",
	"lock_shared":           "golang.org/x/net/webdav takes exclusive locks only (501 for shared ones)",
}

var litmusResult = regexp.MustCompile(`(?m)^\s*\d+\.\s+(\S+?)\.*\s+(?:\d+\.\s+\S+?\.*\s+)?(pass|FAIL|SKIPPED|WARNING)`)

// runLitmus runs litmus's suites against url, with the token as the
// basic-auth password, and fails for every failure litmusAccepted does
// not list.
func runLitmus(t *testing.T, url string) {
	t.Helper()
	litmus := need(t, "litmus")
	cmd := exec.Command(litmus, "-k", url, "dav", testToken)
	cmd.Env = append(os.Environ(), "TESTS=basic copymove props locks http")
	cmd.Dir = t.TempDir()
	out, _ := cmd.CombinedOutput() // litmus exits non-zero on any failure
	text := string(out)
	summaries := strings.Count(text, "<- summary for")
	if summaries != 5 {
		t.Fatalf("litmus ran %d of 5 suites:\n%s", summaries, text)
	}
	passed := 0
	for _, m := range litmusResult.FindAllStringSubmatch(text, -1) {
		switch m[2] {
		case "pass":
			passed++
		case "FAIL":
			if why, ok := litmusAccepted[m[1]]; ok {
				t.Logf("litmus %s fails, accepted: %s", m[1], why)
				continue
			}
			t.Errorf("litmus %s failed", m[1])
		}
	}
	if passed < 80 {
		t.Errorf("litmus: only %d tests passed", passed)
	}
	if t.Failed() {
		t.Logf("litmus output:\n%s", text)
	}
}

// TestDAVLitmus runs litmus's basic, copymove, props, locks and http
// suites against a folder and a bucket.
func TestDAVLitmus(t *testing.T) {
	t.Run("folder", func(t *testing.T) {
		s := startWriter(t, t.TempDir(), "--webdav")
		runLitmus(t, s.URL)
	})
	t.Run("bucket", func(t *testing.T) {
		srv := s3test.Start(t, s3test.Options{})
		s := startS3Largo(t, srv, "dav", "--upload", "--token", testToken, "--webdav")
		runLitmus(t, s.URL)
	})
}

// davLock takes an exclusive write lock on url and returns its token.
func davLock(t *testing.T, url string) string {
	t.Helper()
	body := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>e2e</D:owner></D:lockinfo>`
	resp, text := send(t, "LOCK", url, strings.NewReader(body), int64(len(body)), append([]string{"Timeout", "Second-600", "Depth", "0"}, bearer...)...)
	if resp.StatusCode != 200 && resp.StatusCode != 201 {
		t.Fatalf("LOCK %s: %d %s", url, resp.StatusCode, text)
	}
	tok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	if tok == "" {
		t.Fatalf("LOCK %s: no Lock-Token", url)
	}
	return tok
}

// tusCreateCode starts a tus upload of size bytes to name and returns the
// status.
func tusCreateCode(t *testing.T, base, name string, size int) int {
	t.Helper()
	meta := "filename " + base64.StdEncoding.EncodeToString([]byte(name))
	resp, _ := send(t, "POST", base+"_largo/uploads/", nil, 0, append([]string{"Tus-Resumable", "1.0.0", "Upload-Length", fmt.Sprint(size), "Upload-Metadata", meta}, bearer...)...)
	return resp.StatusCode
}

// checkLocked checks, through the servers at a and b (one server, or two
// on one bucket), that a lock taken through a refuses writes of every
// protocol that do not present its token, through either, and lets
// through those that do.
func checkLocked(t *testing.T, a, b *server) {
	if resp, text := put(t, a.URL+"doc.txt", strings.NewReader("one"), 3, bearer...); resp.StatusCode != 201 {
		t.Fatalf("PUT: %d %s", resp.StatusCode, text)
	}
	tok := davLock(t, a.URL+"doc.txt")
	for _, s := range []*server{a, b} {
		if resp, text := put(t, s.URL+"doc.txt", strings.NewReader("two"), 3, bearer...); resp.StatusCode != 423 {
			t.Errorf("PUT without the token: %d %s; want 423", resp.StatusCode, text)
		}
		if code := tusCreateCode(t, s.URL, "doc.txt", 3); code != 423 {
			t.Errorf("tus creation without the token: %d; want 423", code)
		}
		if resp, text := send(t, "DELETE", s.URL+"doc.txt", nil, 0, bearer...); resp.StatusCode != 423 {
			t.Errorf("DELETE without the token: %d %s; want 423", resp.StatusCode, text)
		}
		other := "<D:lockinfo xmlns:D=\"DAV:\"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
		if resp, _ := send(t, "LOCK", s.URL+"doc.txt", strings.NewReader(other), int64(len(other)), bearer...); resp.StatusCode != 423 {
			t.Errorf("second LOCK: %d; want 423", resp.StatusCode)
		}
	}
	if resp, text := put(t, b.URL+"doc.txt", strings.NewReader("three"), 5, append([]string{"If", "(<" + tok + ">)"}, bearer...)...); resp.StatusCode != 204 {
		t.Errorf("PUT with the token: %d %s; want 204", resp.StatusCode, text)
	}
	if resp, _ := send(t, "UNLOCK", b.URL+"doc.txt", nil, 0, append([]string{"Lock-Token", "<" + tok + ">"}, bearer...)...); resp.StatusCode != 204 {
		t.Errorf("UNLOCK: %d; want 204", resp.StatusCode)
	}
	if resp, text := put(t, a.URL+"doc.txt", strings.NewReader("four"), 4, bearer...); resp.StatusCode != 204 {
		t.Errorf("PUT after UNLOCK: %d %s; want 204", resp.StatusCode, text)
	}
	if code := tusCreateCode(t, a.URL, "doc.txt", 3); code != 201 {
		t.Errorf("tus creation after UNLOCK: %d; want 201", code)
	}
}

// TestDAVLocks: a lock taken by one client refuses another's PUT, tus
// upload, DELETE and LOCK (423) on a folder, and through a second
// instance on the same bucket.
func TestDAVLocks(t *testing.T) {
	t.Run("folder", func(t *testing.T) {
		s := startWriter(t, t.TempDir(), "--webdav")
		checkLocked(t, s, s)
	})
	t.Run("bucket", func(t *testing.T) {
		srv := s3test.Start(t, s3test.Options{})
		a := startS3Largo(t, srv, "", "--upload", "--token", testToken, "--webdav")
		b := startS3Largo(t, srv, "", "--upload", "--token", testToken, "--webdav")
		checkLocked(t, a, b)
	})
}

// TestDAVFinder: Finder's habits. A chunked PUT (no length) of a file and
// of its `._` AppleDouble companion and .DS_Store: the file is stored,
// the companions are answered 201 and never stored or served.
func TestDAVFinder(t *testing.T) {
	dir := t.TempDir()
	s := startWriter(t, dir, "--webdav")
	if resp, text := send(t, "MKCOL", s.URL+"Photos/", nil, 0, bearer...); resp.StatusCode != 201 {
		t.Fatalf("MKCOL: %d %s", resp.StatusCode, text)
	}
	for _, name := range []string{"Photos/._IMG 1.jpg", "Photos/IMG 1.jpg", "Photos/.DS_Store"} {
		url := s.URL + strings.ReplaceAll(name, " ", "%20")
		body := strings.NewReader(strings.Repeat("finder ", 10000))
		if resp, text := put(t, url, struct{ *strings.Reader }{body}, -1, bearer...); resp.StatusCode != 201 {
			t.Errorf("chunked PUT %s: %d %s", name, resp.StatusCode, text)
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, "Photos"))
	if err != nil || len(ents) != 1 || ents[0].Name() != "IMG 1.jpg" {
		t.Errorf("Photos holds %v (%v); want only IMG 1.jpg", ents, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "Photos", "IMG 1.jpg")); len(b) != 70000 {
		t.Errorf("IMG 1.jpg holds %d bytes; want 70000", len(b))
	}
	if resp := get(t, s.URL+"Photos/._IMG%201.jpg"); resp.StatusCode != 404 {
		t.Errorf("GET of the companion: %d; want 404", resp.StatusCode)
	}
	// Finder locks a file, and its companion, before it writes them, and
	// writes with the lock's token.
	for _, name := range []string{"Photos/IMG%202.jpg", "Photos/._IMG%202.jpg"} {
		tok := davLock(t, s.URL+name)
		body := struct{ *strings.Reader }{strings.NewReader("locked write")}
		if resp, text := put(t, s.URL+name, body, -1, append([]string{"If", "(<" + tok + ">)"}, bearer...)...); resp.StatusCode/100 != 2 {
			t.Errorf("chunked PUT of %s under its lock: %d %s", name, resp.StatusCode, text)
		}
		if resp, _ := send(t, "UNLOCK", s.URL+name, nil, 0, append([]string{"Lock-Token", "<" + tok + ">"}, bearer...)...); resp.StatusCode != 204 {
			t.Errorf("UNLOCK %s: %d", name, resp.StatusCode)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "Photos", "IMG 2.jpg")); string(b) != "locked write" {
		t.Errorf("IMG 2.jpg holds %q (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "Photos", "._IMG 2.jpg")); !os.IsNotExist(err) {
		t.Errorf("the locked companion was stored: %v", err)
	}
}

// TestDAVWindows: Windows Explorer's sequence: OPTIONS and PROPFIND on the
// root, a PUT, then PROPPATCH of its Win32 properties, which a PROPFIND
// returns, and which go with the file when it is deleted.
func TestDAVWindows(t *testing.T) {
	s := startWriter(t, t.TempDir(), "--webdav")
	resp, _ := send(t, "OPTIONS", s.URL, nil, 0)
	if resp.Header.Get("DAV") != "1, 2" || resp.Header.Get("MS-Author-Via") != "DAV" {
		t.Errorf("OPTIONS: DAV %q, MS-Author-Via %q", resp.Header.Get("DAV"), resp.Header.Get("MS-Author-Via"))
	}
	resp, text := send(t, "PROPFIND", s.URL, nil, 0, append([]string{"Depth", "1"}, bearer...)...)
	if resp.StatusCode != 207 || !strings.Contains(text, "<D:collection") {
		t.Errorf("PROPFIND of the root: %d %s", resp.StatusCode, text)
	}
	if resp, text := put(t, s.URL+"report.docx", strings.NewReader("doc"), 3, bearer...); resp.StatusCode != 201 {
		t.Fatalf("PUT: %d %s", resp.StatusCode, text)
	}
	patch := `<?xml version="1.0" encoding="utf-8" ?><D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:schemas-microsoft-com:"><D:set><D:prop>` +
		`<Z:Win32CreationTime>Tue, 01 Dec 2026 10:00:00 GMT</Z:Win32CreationTime>` +
		`<Z:Win32LastModifiedTime>Tue, 01 Dec 2026 11:00:00 GMT</Z:Win32LastModifiedTime>` +
		`<Z:Win32FileAttributes>00000020</Z:Win32FileAttributes></D:prop></D:set></D:propertyupdate>`
	resp, text = send(t, "PROPPATCH", s.URL+"report.docx", strings.NewReader(patch), int64(len(patch)), bearer...)
	if resp.StatusCode != 207 || !strings.Contains(text, "200 OK") {
		t.Fatalf("PROPPATCH: %d %s", resp.StatusCode, text)
	}
	find := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>`
	resp, text = send(t, "PROPFIND", s.URL+"report.docx", strings.NewReader(find), int64(len(find)), append([]string{"Depth", "0"}, bearer...)...)
	for _, want := range []string{"Win32CreationTime", "Tue, 01 Dec 2026 11:00:00 GMT", "00000020"} {
		if !strings.Contains(text, want) {
			t.Errorf("PROPFIND after PROPPATCH (%d) lacks %q:\n%s", resp.StatusCode, want, text)
		}
	}
	if resp, _ := send(t, "DELETE", s.URL+"report.docx", nil, 0, bearer...); resp.StatusCode != 204 {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	put(t, s.URL+"report.docx", strings.NewReader("new"), 3, bearer...)
	_, text = send(t, "PROPFIND", s.URL+"report.docx", strings.NewReader(find), int64(len(find)), append([]string{"Depth", "0"}, bearer...)...)
	if strings.Contains(text, "Win32CreationTime") {
		t.Errorf("a new file under a deleted one's name has its properties:\n%s", text)
	}
	resp, text = send(t, "PROPFIND", s.URL, nil, 0, bearer...)
	if resp.StatusCode != 403 || !strings.Contains(text, "propfind-finite-depth") {
		t.Errorf("PROPFIND without Depth: %d %s; want 403 propfind-finite-depth", resp.StatusCode, text)
	}
	if resp, _ := send(t, "PROPFIND", s.URL, nil, 0, "Depth", "infinity"); resp.StatusCode != 403 {
		t.Errorf("PROPFIND Depth: infinity: %d; want 403", resp.StatusCode)
	}
}

// TestDAVCadaver drives cadaver, a command-line WebDAV client, through a
// script: mkcol, put, get, move, and a listing.
func TestDAVCadaver(t *testing.T) {
	cadaver := need(t, "cadaver")
	dir := t.TempDir()
	s := startWriter(t, dir, "--webdav")
	work := t.TempDir()
	src := filepath.Join(work, "src.bin")
	sha := writeRandom(t, src, 3<<20+5, 7)
	home := t.TempDir()
	// cadaver reads credentials from ~/.netrc.
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine 127.0.0.1 login dav password "+testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("mkcol box\ncd box\nput %s data.bin\nmove data.bin moved.bin\nget moved.bin %s\nls\nquit\n", src, filepath.Join(work, "back.bin"))
	cmd := exec.Command(cadaver, s.URL)
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stdin = strings.NewReader(script)
	cmd.Dir = work
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cadaver: %v\n%s", err, out)
	}
	if got := fileSHA(t, filepath.Join(dir, "box", "moved.bin")); got != sha {
		t.Errorf("moved.bin on the server: sha256 %s; want %s\n%s", got, sha, out)
	}
	if got := fileSHA(t, filepath.Join(work, "back.bin")); got != sha {
		t.Errorf("moved.bin as cadaver got it: sha256 %s; want %s\n%s", got, sha, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "box", "data.bin")); !os.IsNotExist(err) {
		t.Errorf("data.bin still there after the move: %v", err)
	}
	if !strings.Contains(string(out), "moved.bin") {
		t.Errorf("cadaver's listing lacks moved.bin:\n%s", out)
	}
}

// TestDAVRclone copies a tree into largo and back out with rclone's
// webdav backend (vendor other): sizes, contents and modification times
// (to the second, what getlastmodified carries) survive the round trip,
// and rclone check finds nothing missing or different.
func TestDAVRclone(t *testing.T) {
	rclone := need(t, "rclone")
	dir := t.TempDir()
	s := startWriter(t, dir, "--webdav")
	src, back := t.TempDir(), t.TempDir()
	shas := map[string]string{}
	for i, name := range []string{"a.bin", "deep/b.bin", "deep/er/c d.bin", "empty.txt"} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		shas[name] = writeRandom(t, p, int64(i*(1<<20)+i*13), uint64(i+1))
	}
	env := append(os.Environ(),
		"RCLONE_CONFIG_DAV_TYPE=webdav",
		"RCLONE_CONFIG_DAV_URL="+s.URL+"tree/",
		"RCLONE_CONFIG_DAV_VENDOR=other",
		"RCLONE_CONFIG_DAV_BEARER_TOKEN="+testToken,
		"RCLONE_CONFIG="+filepath.Join(t.TempDir(), "none.conf"),
	)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(rclone, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("rclone %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("copy", src, "dav:")
	run("check", "--size-only", src, "dav:")
	run("copy", "dav:", back)
	for name, sha := range shas {
		onServer := filepath.Join(dir, "tree", filepath.FromSlash(name))
		out := filepath.Join(back, filepath.FromSlash(name))
		if got := fileSHA(t, onServer); got != sha {
			t.Errorf("%s on the server: sha256 %s; want %s", name, got, sha)
		}
		if got := fileSHA(t, out); got != sha {
			t.Errorf("%s copied back: sha256 %s; want %s", name, got, sha)
		}
		a, err1 := os.Stat(onServer)
		b, err2 := os.Stat(out)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if a.Size() != b.Size() || !a.ModTime().Truncate(time.Second).Equal(b.ModTime()) {
			t.Errorf("%s: server %d bytes at %v, copied back %d bytes at %v", name, a.Size(), a.ModTime(), b.Size(), b.ModTime())
		}
	}
	listing := run("lsl", "dav:")
	for name := range shas {
		if !strings.Contains(listing, name+"\n") {
			t.Errorf("rclone lsl lacks %s:\n%s", name, listing)
		}
	}
}

// TestDAVDavfs2 mounts largo with davfs2 (through FUSE), and copies,
// makes a folder, moves (davfs2 locks the file, then moves it with its
// lock's token in an If header), reads back and removes through the
// mount. Mounting needs root and /dev/fuse.
func TestDAVDavfs2(t *testing.T) {
	mountDavfs := need(t, "mount.davfs")
	if os.Geteuid() != 0 {
		testenv.Missing(t, "mounting with davfs2 needs root: run the tests as root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Missing(t, "no /dev/fuse to mount with davfs2 (%v): give the machine or container the fuse device", err)
	}
	dir := t.TempDir()
	s := startWriter(t, dir, "--webdav")
	mnt := t.TempDir()
	cmd := exec.Command(mountDavfs, "-o", "uid=0,gid=0", s.URL, mnt)
	cmd.Stdin = strings.NewReader("dav\n" + testToken + "\n") // user name, password
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mount.davfs: %v\n%s", err, out)
	}
	mounted := true
	unmount := func() {
		if mounted {
			mounted = false
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				t.Errorf("umount: %v\n%s", err, out)
			}
		}
	}
	t.Cleanup(unmount)
	src := filepath.Join(t.TempDir(), "src.bin")
	sha := writeRandom(t, src, 5<<20+3, 11)
	for _, args := range [][]string{
		{"cp", src, filepath.Join(mnt, "a.bin")},
		{"mkdir", filepath.Join(mnt, "sub")},
		{"mv", filepath.Join(mnt, "a.bin"), filepath.Join(mnt, "sub", "moved.bin")},
		{"cp", src, filepath.Join(mnt, "gone.bin")},
		{"rm", filepath.Join(mnt, "gone.bin")},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	if got := fileSHA(t, filepath.Join(mnt, "sub", "moved.bin")); got != sha {
		t.Errorf("moved.bin read through the mount: sha256 %s; want %s", got, sha)
	}
	unmount() // davfs2 sends what it cached
	if got := fileSHA(t, filepath.Join(dir, "sub", "moved.bin")); got != sha {
		t.Errorf("moved.bin on the server: sha256 %s; want %s", got, sha)
	}
	for _, gone := range []string{"a.bin", "gone.bin"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still on the server: %v", gone, err)
		}
	}
}

// TestDAVAccess: the DAV methods obey the access rules, on a folder and
// on a bucket: PROPFIND needs list (or read), and its answer leaves out
// what the requester may not read; MKCOL, PROPPATCH and LOCK need write;
// COPY needs read of the source and write of the destination; MOVE read
// and delete of the source too.
func TestDAVAccess(t *testing.T) { forEachTarget(t, davAccess) }

func davAccess(t *testing.T, g *target) {
	s, _ := accessServer(t, g, "--webdav")
	alice := []string{"Authorization", "Basic " + basic("alice", alicePassword)}
	bot := []string{"Authorization", "Bearer " + botToken}
	lock := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`
	patch := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:x xmlns:Z="urn:t">1</Z:x></D:prop></D:set></D:propertyupdate>`
	for _, tt := range []struct {
		method, path string
		hdr          []string
		body         string
		code         int
	}{
		{"PROPFIND", "private/", nil, "", 401},
		{"PROPFIND", "private/", bot, "", 403},
		{"PROPFIND", "private/", alice, "", 207},
		{"MKCOL", "pub/x/", nil, "", 401},
		{"MKCOL", "pub/x/", bot, "", 403},
		{"MKCOL", "private/x/", alice, "", 201},
		{"PROPPATCH", "pub/a.txt", bot, patch, 403},
		{"LOCK", "pub/a.txt", nil, lock, 401},
		{"COPY", "pub/a.txt", append([]string{"Destination", s.URL + "private/c.txt"}, bot...), "", 403},
		{"COPY", "private/s.txt", append([]string{"Destination", s.URL + "inbox/leak.txt"}, bot...), "", 403},
		{"COPY", "pub/a.txt", append([]string{"Destination", s.URL + "inbox/a.txt"}, bot...), "", 201},
		{"MOVE", "inbox/old.txt", append([]string{"Destination", s.URL + "inbox/moved.txt"}, bot...), "", 403},
		{"COPY", "pub/a.txt", append([]string{"Destination", s.URL + "private/c.txt"}, alice...), "", 201},
		{"MOVE", "private/c.txt", append([]string{"Destination", s.URL + "private/.hidden"}, alice...), "", 403},
		{"MOVE", "private/c.txt", append([]string{"Destination", s.URL + "private/d.txt"}, alice...), "", 201},
	} {
		hdr := append([]string{"Depth", "1"}, tt.hdr...)
		if tt.method == "LOCK" || tt.method == "COPY" || tt.method == "MOVE" {
			hdr = tt.hdr
		}
		resp, text := send(t, tt.method, s.URL+tt.path, strings.NewReader(tt.body), int64(len(tt.body)), hdr...)
		if resp.StatusCode != tt.code {
			t.Errorf("%s /%s with %v: %d %s; want %d", tt.method, tt.path, tt.hdr, resp.StatusCode, text, tt.code)
		}
	}
	_, root := send(t, "PROPFIND", s.URL, nil, 0, "Depth", "1")
	if strings.Contains(root, "private") || !strings.Contains(root, "/pub/") {
		t.Errorf("anonymous PROPFIND of the root shows what it may not read, or not what it may:\n%s", root)
	}
	if resp, got := send(t, "GET", s.URL+"private/d.txt", nil, 0, alice...); resp.StatusCode != 200 || got != "public" {
		t.Errorf("private/d.txt after the copy and move: %d %q", resp.StatusCode, got)
	}
	g.clean(t)
}
