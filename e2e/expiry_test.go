//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// upAccess is an access file where up may do everything and everyone
// may read and list.
const upAccess = `
[[user]]
name = "up"
tokens = ["` + testToken + `"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/"
users = ["up"]
allow = ["all"]
`

// expiryAccess is the access file of the expiry tests: upAccess, and
// files under /tmp expire after expiryTTL, except those under /tmp/keep.
const expiryAccess = upAccess + `
[[expire]]
path = "/tmp"
after = "4s"

[[expire]]
path = "/tmp/keep"
after = "0"
`

const expiryTTL = 4 * time.Second

// serveExpiry starts largo on g with the access file of the expiry
// tests, WebDAV and a quick sweep.
func (g *target) serveExpiry(t *testing.T, access string) *server {
	t.Helper()
	args := []string{"--access", access, "--webdav", "--expiry-sweep", "300ms", adminListen, "127.0.0.1:0"}
	if g.srv == nil {
		return startServer(t, g.dir, args...)
	}
	return startS3Largo(t, g.srv, "", args...)
}

// share runs largo share on g's store with args and returns what it
// printed.
func (g *target) share(t *testing.T, access string, args ...string) string {
	t.Helper()
	var env []string
	args = append([]string{"share", "--access", access}, args...)
	if g.srv == nil {
		args = append(args, "--dir", g.dir)
	} else {
		args = append(args, "--store", "s3://"+g.srv.Bucket+"/")
		env = g.srv.Env()
	}
	code, stdout, stderr := runLargo(t, env, args...)
	if code != 0 {
		t.Fatalf("largo %v: exit %d\n%s%s", args, code, stdout, stderr)
	}
	return stdout
}

// exists reports whether name is in g's folder or bucket.
func (g *target) exists(name string) bool {
	_, err := os.Stat(filepath.Join(g.dir, filepath.FromSlash(name)))
	return err == nil
}

// listed returns the JSON listing of the folder at url, by name.
func listed(t *testing.T, url string) map[string]map[string]any {
	t.Helper()
	resp := get(t, url, "Accept", "application/json")
	defer resp.Body.Close()
	var l struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatalf("listing %s: %d, %v", url, resp.StatusCode, err)
	}
	out := map[string]map[string]any{}
	for _, e := range l.Entries {
		out[e["name"].(string)] = e
	}
	return out
}

// TestExpiryRules: files under an [[expire]] path, written by PUT, a
// form, tus, the IETF protocol, WebDAV and out of band, show when they
// expire in the JSON listing and on the page, and are removed by the
// sweep (logged, counted) once their time is up; a file under a longer
// path that never expires, and a file outside, stay. On a folder and on
// a bucket.
func TestExpiryRules(t *testing.T) { forEachTarget(t, expiryRules) }

func expiryRules(t *testing.T, g *target) {
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(expiryAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "up.bin")
	writeRandom(t, src, 200_000, 91)
	g.seed(t, "tmp/keep/kept.txt", "kept")
	g.seed(t, "other/stays.txt", "stays")
	s := g.serveExpiry(t, access)
	auth := "Authorization: Bearer " + testToken
	start := time.Now()

	curlOK(t, "-H", auth, "-T", src, s.URL+"tmp/put.bin")
	curlOK(t, "-H", auth, "-F", "file=@"+src+";filename=form.bin", s.URL+"tmp/")
	cmd := nodeScript(t, "tus-upload.mjs", "--endpoint", s.URL+"_largo/uploads/", "--file", src,
		"--name", "tmp/tus.bin", "--token", testToken, "--chunk", "65536")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "done ") {
		t.Fatalf("tus-js-client: %v\n%s", err, tail(string(b), 2000))
	}
	if code, out, stderr := runLargo(t, []string{"LARGO_TOKEN=" + testToken}, "put", "--protocol", "ietf", "-q", src, s.URL+"tmp/ietf.bin"); code != 0 {
		t.Fatalf("largo put: exit %d\n%s\n%s", code, out, stderr)
	}
	dav := exec.Command(need(t, "rclone"), "copyto", src, ":webdav:tmp/dav.bin", "--webdav-url", s.URL,
		"--webdav-vendor", "other", "--webdav-bearer-token", testToken)
	dav.Env = append(os.Environ(), "RCLONE_CONFIG="+filepath.Join(t.TempDir(), "none.conf"))
	if b, err := dav.CombinedOutput(); err != nil {
		t.Fatalf("rclone copyto: %v\n%s", err, b)
	}
	g.seed(t, "tmp/oob.txt", "out of band")
	names := []string{"put.bin", "form.bin", "tus.bin", "ietf.bin", "dav.bin", "oob.txt"}

	// The listing tells when each expires: its landing plus the TTL.
	entries := listed(t, s.URL+"tmp/")
	for _, n := range names {
		e, ok := entries[n]
		if !ok {
			t.Fatalf("tmp/%s not listed: %v", n, entries)
		}
		exp, _ := e["expires"].(string)
		at, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			t.Errorf("tmp/%s: expires %q: %v", n, exp, err)
			continue
		}
		if at.Before(start.Add(expiryTTL).Add(-2*time.Second)) || at.After(time.Now().Add(expiryTTL+time.Second)) {
			t.Errorf("tmp/%s expires at %v; want about %v after it landed (%v)", n, at, expiryTTL, start)
		}
	}
	if _, ok := listed(t, s.URL+"tmp/keep/")["kept.txt"]["expires"]; ok {
		t.Error("tmp/keep/kept.txt listed with an expiry; its path never expires")
	}
	if _, ok := listed(t, s.URL+"other/")["stays.txt"]["expires"]; ok {
		t.Error("other/stays.txt listed with an expiry; no table covers it")
	}
	page := get(t, s.URL+"tmp/")
	var sb strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := page.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	page.Body.Close()
	if !strings.Contains(sb.String(), `class="exp">expires <time`) {
		t.Error("the page shows no expiry in the file rows")
	}

	// The sweep removes them all once their time is up, and nothing else.
	if !waitFor(expiryTTL+15*time.Second, func() bool {
		for _, n := range names {
			if g.exists("tmp/" + n) {
				return false
			}
		}
		return true
	}) {
		for _, n := range names {
			if g.exists("tmp/" + n) {
				t.Errorf("tmp/%s still there %v after it landed", n, time.Since(start))
			}
		}
	}
	if time.Since(start) < expiryTTL {
		t.Errorf("files gone after %v, before their time", time.Since(start))
	}
	for _, n := range []string{"tmp/keep/kept.txt", "other/stays.txt"} {
		if !g.exists(n) {
			t.Errorf("%s removed; no table expires it", n)
		}
	}
	// The log line and the count follow each removal by a moment.
	logged := func() bool {
		logs := s.stdout.String() + s.stderr.String()
		for _, n := range names {
			if !strings.Contains(logs, "name=tmp/"+n+" why=rule") {
				return false
			}
		}
		return metric(t, s, `largo_expired_files_total{why="rule"}`) == float64(len(names))
	}
	waitFor(5*time.Second, logged)
	logs := s.stdout.String() + s.stderr.String()
	for _, n := range names {
		if !strings.Contains(logs, "expired file removed") || !strings.Contains(logs, "name=tmp/"+n) {
			t.Errorf("no log line for the removal of tmp/%s:\n%s", n, tail(logs, 3000))
		}
	}
	if n := metric(t, s, `largo_expired_files_total{why="rule"}`); n != float64(len(names)) {
		t.Errorf("largo_expired_files_total{why=\"rule\"} %v; want %d", n, len(names))
	}
	if resp := get(t, s.URL+"tmp/put.bin"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of an expired file: %d; want 404", resp.StatusCode)
	}

	// A table added to the access file and reloaded (SIGHUP) holds at
	// the next sweep: other/stays.txt landed long enough ago.
	more := expiryAccess + "\n[[expire]]\npath = \"/other\"\nafter = \"1s\"\n"
	if err := os.WriteFile(access, []byte(more), 0o600); err != nil {
		t.Fatal(err)
	}
	s.signal(syscall.SIGHUP)
	if !waitFor(15*time.Second, func() bool { return !g.exists("other/stays.txt") }) {
		t.Error("other/stays.txt still there after a table for /other was reloaded")
	}
	if !g.exists("tmp/keep/kept.txt") {
		t.Error("tmp/keep/kept.txt removed after the reload")
	}
}

// TestExpiryDropBox: a drop box with a file TTL: a file that lands
// through it lists its expiry and is removed that long after, logged
// with the link; a file that landed through it and was then replaced by
// a user is not removed for the old version's expiry.
func TestExpiryDropBox(t *testing.T) { forEachTarget(t, expiryDropBox) }

func expiryDropBox(t *testing.T, g *target) {
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(expiryAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	g.seed(t, "drop/readme.txt", "already here")
	out := g.share(t, access, "--write", "--file-ttl", "3s", "--url", "http://x", "drop")
	linkPath := strings.TrimPrefix(strings.TrimSpace(out), "http://x/")
	s := g.serveExpiry(t, access)
	link := s.URL + linkPath
	src := filepath.Join(t.TempDir(), "d.bin")
	writeRandom(t, src, 100_000, 92)

	curlOK(t, "-T", src, link+"gone.bin")
	curlOK(t, "-T", src, link+"replaced.bin")
	curlOK(t, "-F", "file=@"+src+";filename=form.bin", link)
	landed := time.Now()
	if list := g.share(t, access, "--list"); !strings.Contains(list, "files expire after 3s") {
		t.Errorf("largo share --list does not show the file TTL:\n%s", list)
	}
	entries := listed(t, s.URL+"drop/")
	for _, n := range []string{"gone.bin", "replaced.bin", "form.bin"} {
		if _, ok := entries[n]["expires"].(string); !ok {
			t.Errorf("drop/%s listed without its expiry: %v", n, entries[n])
		}
	}
	if _, ok := entries["readme.txt"]["expires"]; ok {
		t.Error("drop/readme.txt, which did not come through the link, lists an expiry")
	}
	// A user replaces one: the new version is nobody's drop.
	time.Sleep(1100 * time.Millisecond) // a folder's ETag moves with the modification time
	curlOK(t, "-H", "Authorization: Bearer "+testToken, "-T", src, s.URL+"drop/replaced.bin")

	if !waitFor(15*time.Second, func() bool { return !g.exists("drop/gone.bin") && !g.exists("drop/form.bin") }) {
		t.Fatalf("drop box files still there %v after they landed", time.Since(landed))
	}
	time.Sleep(time.Second) // a sweep or three more
	for _, n := range []string{"drop/replaced.bin", "drop/readme.txt"} {
		if !g.exists(n) {
			t.Errorf("%s removed; its version never expired", n)
		}
	}
	if _, ok := listed(t, s.URL+"drop/")["replaced.bin"]["expires"]; ok {
		t.Error("drop/replaced.bin still lists the old version's expiry")
	}
	waitFor(5*time.Second, func() bool {
		return metric(t, s, `largo_expired_files_total{why="link"}`) == 2
	})
	logs := s.stdout.String() + s.stderr.String()
	if !strings.Contains(logs, "name=drop/gone.bin why=link") {
		t.Errorf("no log line for the removal of drop/gone.bin through its link:\n%s", tail(logs, 2000))
	}
	if n := metric(t, s, `largo_expired_files_total{why="link"}`); n != 2 {
		t.Errorf("largo_expired_files_total{why=\"link\"} %v; want 2", n)
	}
}

// TestExpiryDownloads: a file link that gives two downloads: one resumed
// with curl -C - after a first part, one made in four segments by largo
// get -j 4, each counts once; the third complete download is refused
// with 410 Gone, and largo share --list shows 2/2.
func TestExpiryDownloads(t *testing.T) { forEachTarget(t, expiryDownloads) }

func expiryDownloads(t *testing.T, g *target) {
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(expiryAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	src := filepath.Join(t.TempDir(), "f.bin")
	sha := writeRandom(t, src, size, 93)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	g.seed(t, "dl/f.bin", string(data))
	out := g.share(t, access, "--max-downloads", "2", "--url", "http://x", "dl/f.bin")
	s := g.serveExpiry(t, access)
	link := s.URL + strings.TrimPrefix(strings.TrimSpace(out), "http://x/")
	dir := t.TempDir()

	// A download cut after its first part, then resumed.
	part := filepath.Join(dir, "resumed")
	curlOK(t, "-r", "0-"+strconv.Itoa(size/3), "-o", part, link)
	curlOK(t, "-C", "-", "-o", part, link)
	if got := fileSHA(t, part); got != sha {
		t.Fatalf("the resumed download's sha %s; want %s", got, sha)
	}
	if list := listShows(t, g, access, "downloads 1/2"); !strings.Contains(list, "downloads 1/2") {
		t.Errorf("after a resumed download largo share --list shows:\n%s\nwant downloads 1/2", list)
	}

	// A download in four segments at once.
	seg := filepath.Join(dir, "segmented")
	if code, o, e := runLargo(t, nil, "get", "-q", "-j", "4", "-o", seg, link); code != 0 {
		t.Fatalf("largo get -j 4: exit %d\n%s\n%s", code, o, e)
	}
	if got := fileSHA(t, seg); got != sha {
		t.Fatalf("the segmented download's sha %s; want %s", got, sha)
	}
	if list := listShows(t, g, access, "downloads 2/2"); !strings.Contains(list, "downloads 2/2") {
		t.Errorf("after a segmented download largo share --list shows:\n%s\nwant downloads 2/2", list)
	}

	// The third: gone.
	resp := get(t, link)
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone || !strings.Contains(string(body[:n]), "used up") {
		t.Errorf("third download: %d %q; want 410 saying the downloads are used up", resp.StatusCode, body[:n])
	}
	// A range of it too: the link gives nothing any more.
	if resp := get(t, link, "Range", "bytes=0-9"); resp.StatusCode != http.StatusGone {
		t.Errorf("a range after the limit: %d; want 410", resp.StatusCode)
	}

	// A link made on the page with one download: the links API shows
	// it used, then the link is gone.
	auth := []string{"-H", "Authorization: Bearer " + testToken, "-H", "Origin: " + strings.TrimSuffix(s.URL, "/")}
	made := curlOK(t, append(auth, "-d", "path=/dl/f.bin", "-d", "expires=1h", "-d", "max_downloads=1", s.URL+"_largo/share")...)
	if !strings.Contains(made, `"max_downloads":1`) {
		t.Fatalf("share form answered %s; want max_downloads 1", made)
	}
	pageLink := s.URL + strings.TrimPrefix(jsonField(t, made, "url"), "/")
	curlOK(t, "-o", filepath.Join(dir, "once"), pageLink)
	// The client may have every byte before the server counts them.
	var list string
	if !waitFor(10*time.Second, func() bool {
		list = curlOK(t, append(auth, s.URL+"_largo/links/")...)
		return strings.Contains(list, `"max_downloads":1,"downloads":1`)
	}) {
		t.Errorf("the links API shows %s; want one download of one used", list)
	}
	if resp := get(t, pageLink); resp.StatusCode != http.StatusGone {
		t.Errorf("the page's link after its download: %d; want 410", resp.StatusCode)
	}
	if out, err := curl(need(t, "curl"), append(auth, "-d", "path=/dl/", "-d", "expires=1h", "-d", "max_downloads=1", s.URL+"_largo/share")...); err == nil || !strings.Contains(out+err.Error(), "only a link to a file") {
		t.Errorf("a download limit on a folder link: %v %s; want 400 saying only a file link counts", err, out)
	}
}

// listShows returns what largo share --list prints once it shows want,
// or after 10 s: a client may have every byte of a download before the
// server has counted them.
func listShows(t *testing.T, g *target, access, want string) string {
	t.Helper()
	var list string
	waitFor(10*time.Second, func() bool {
		list = g.share(t, access, "--list")
		return strings.Contains(list, want)
	})
	return list
}
