//go:build e2e

package e2e

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A request that acts on a whole folder at once must not reach what a
// rule below the folder protects.

const keeperToken = "keeper-token-0123456789"

// belowServer starts largo on g with an access file where the keeper may
// do everything, except in /m/keep, which everyone only reads and lists.
func belowServer(t *testing.T, g *target, extra ...string) *server {
	t.Helper()
	file := writeAccessFile(t, `
[[user]]
name = "keeper"
tokens = ["`+keeperToken+`"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/"
users = ["keeper"]
allow = ["all"]

[[rule]]
path = "/m/keep"
users = ["*"]
allow = ["read", "list"]
`)
	g.seed(t, "m/ok.txt", "ok")
	g.seed(t, "m/keep/k.txt", "kept")
	g.seed(t, "other/o.txt", "other")
	args := append([]string{"--upload", "--access", file}, extra...)
	if g.srv == nil {
		return startServer(t, g.dir, args...)
	}
	return startS3Largo(t, g.srv, "", args...)
}

// curlStatus sends a request with curl and returns the status it got.
func curlStatus(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("curl", append([]string{"-s", "-o", "/dev/null", "-w", "%{http_code}"}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	return string(out)
}

func TestDeleteFolderHonoursRulesBelow(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		for _, dav := range []bool{false, true} {
			var extra []string
			query := "?recursive=1"
			if dav {
				extra, query = []string{"--webdav"}, "" // a DAV DELETE of a folder takes all it holds
			}
			s := belowServer(t, g, extra...)
			auth := "Authorization: Bearer " + keeperToken
			if got := curlStatus(t, "-X", "DELETE", "-H", auth, s.URL+"m/keep/k.txt"); got != "403" {
				t.Errorf("webdav %v: DELETE of a kept file: %s; want 403", dav, got)
			}
			if got := curlStatus(t, "-X", "DELETE", "-H", auth, s.URL+"m/"+query); got != "403" {
				t.Errorf("webdav %v: DELETE of the folder above a kept one: %s; want 403", dav, got)
			}
			for _, name := range []string{"m/ok.txt", "m/keep/k.txt"} {
				if got := curlStatus(t, s.URL+name); got != "200" {
					t.Errorf("webdav %v: after the refused DELETE, GET /%s: %s; want 200", dav, name, got)
				}
			}
			// A folder no rule below protects goes as before.
			if got := curlStatus(t, "-X", "DELETE", "-H", auth, s.URL+"other/"+query); got != "204" {
				t.Errorf("webdav %v: DELETE of an unprotected folder: %s; want 204", dav, got)
			}
			if got := curlStatus(t, s.URL+"other/o.txt"); got != "404" {
				t.Errorf("webdav %v: GET of a removed file: %s; want 404", dav, got)
			}
			g.seed(t, "other/o.txt", "other")
		}
	})
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// TestResumableNamesHonourRules: the name a resumable upload writes is
// the name the access rules judge, however its request spells it: a tus
// Upload-Metadata with a pair the upload ignores, an IETF POST whose
// file name reaches into a folder below, and a drop-box link, which only
// creates files in its own folder, whatever the protocol.
func TestResumableNamesHonourRules(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) {
		s := belowServer(t, g)
		auth := "Authorization: Bearer " + keeperToken
		ietf := []string{"-H", "Upload-Draft-Interop-Version: 6", "-H", "Upload-Complete: ?1"}
		for _, tt := range []struct {
			what string
			args []string
			want string
		}{
			{"tus into the kept folder", []string{"-X", "POST", "-H", auth, "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 5",
				"-H", "Upload-Metadata: filename " + b64("t.txt") + ",folder " + b64("m/keep"), s.URL + "_largo/uploads/"}, "403"},
			{"tus into the kept folder, with a pair the upload ignores", []string{"-X", "POST", "-H", auth, "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 5",
				"-H", "Upload-Metadata: filename " + b64("t.txt") + ",folder " + b64("m/keep") + ",junk !!", s.URL + "_largo/uploads/"}, "403"},
			{"tus beside it", []string{"-X", "POST", "-H", auth, "-H", "Tus-Resumable: 1.0.0", "-H", "Upload-Length: 5",
				"-H", "Upload-Metadata: filename " + b64("t.txt") + ",folder " + b64("m"), s.URL + "_largo/uploads/"}, "201"},
			{"IETF POST named into the kept folder", append([]string{"-X", "POST", "-H", auth, "-H", `Content-Disposition: attachment; filename="keep/i.txt"`,
				"--data-binary", "ietf", s.URL + "m/"}, ietf...), "403"},
			{"IETF POST with metadata into the kept folder", append([]string{"-X", "POST", "-H", auth, "-H", "Upload-Metadata: filename " + b64("i.txt") + ",folder " + b64("keep"),
				"--data-binary", "ietf", s.URL + "m/"}, ietf...), "403"},
			{"IETF POST beside it", append([]string{"-X", "POST", "-H", auth, "-H", `Content-Disposition: attachment; filename="i.txt"`,
				"--data-binary", "ietf", s.URL + "m/"}, ietf...), "201"},
		} {
			if got := curlStatus(t, tt.args...); got != tt.want {
				t.Errorf("%s: %s; want %s", tt.what, got, tt.want)
			}
		}
		for _, name := range []string{"m/keep/t.txt", "m/keep/i.txt"} {
			if got := curlStatus(t, s.URL+name); got != "404" {
				t.Errorf("GET /%s: %s; want 404", name, got)
			}
		}

		drop := shareLink(t, g, s, "/m", "--write")
		for _, tt := range []struct {
			what string
			args []string
			want string
		}{
			{"IETF PUT replacing a file", append([]string{"-X", "PUT", "--data-binary", "replaced", drop + "ok.txt"}, ietf...), "412"},
			{"IETF PUT replacing a file, If-Match given", append([]string{"-X", "PUT", "-H", "If-Match: *", "--data-binary", "replaced", drop + "ok.txt"}, ietf...), "412"},
			{"IETF POST into a folder below", append([]string{"-X", "POST", "-H", `Content-Disposition: attachment; filename="sub/d.txt"`, "--data-binary", "deep", drop}, ietf...), "403"},
			{"IETF PUT of a new file", append([]string{"-X", "PUT", "--data-binary", "new", drop + "new.txt"}, ietf...), "201"},
		} {
			if got := curlStatus(t, tt.args...); got != tt.want {
				t.Errorf("drop box, %s: %s; want %s", tt.what, got, tt.want)
			}
		}
		resp, body := send(t, "GET", s.URL+"m/ok.txt", nil, 0)
		if resp.StatusCode != 200 || body != "ok" {
			t.Errorf("after the drop box's writes, /m/ok.txt: %d %q; want 200 \"ok\"", resp.StatusCode, body)
		}
		if got := curlStatus(t, s.URL+"m/sub/d.txt"); got != "404" {
			t.Errorf("GET /m/sub/d.txt: %s; want 404", got)
		}
	})
}

// TestSidecarsHonourRules: a file a rule hides stays hidden under the
// names of its precompressed sidecars: direct downloads, listings and
// archives.
func TestSidecarsHonourRules(t *testing.T) {
	need(t, "curl")
	dir := t.TempDir()
	var csv strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&csv, "row,%d,some text to compress\n", i)
	}
	for _, name := range []string{"secret.csv", "open.csv"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(csv.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, stderr := runLargo(t, nil, "precompress", dir); code != 0 {
		t.Fatalf("precompress: exit %d\n%s\n%s", code, out, stderr)
	}
	file := writeAccessFile(t, `
[[user]]
name = "keeper"
tokens = ["`+keeperToken+`"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/secret.csv"
users = ["anonymous"]
allow = []
`)
	s := startServer(t, dir, "--access", file)
	for _, ext := range []string{"", ".gz", ".br", ".zst"} {
		if got := curlStatus(t, s.URL+"secret.csv"+ext); got != "401" {
			t.Errorf("anonymous GET /secret.csv%s: %s; want 401", ext, got)
		}
		if got := curlStatus(t, "-H", "Authorization: Bearer "+keeperToken, s.URL+"secret.csv"+ext); got != "200" {
			t.Errorf("the keeper's GET /secret.csv%s: %s; want 200", ext, got)
		}
		if got := curlStatus(t, s.URL+"open.csv"+ext); got != "200" {
			t.Errorf("anonymous GET /open.csv%s: %s; want 200", ext, got)
		}
	}
	_, list := send(t, "GET", s.URL, nil, 0, "Accept", "application/json")
	_, tar := send(t, "GET", s.URL+"?archive=tar", nil, 0)
	if strings.Contains(list, "secret") || strings.Contains(tar, "secret") {
		t.Errorf("the anonymous listing or archive names a sidecar of the hidden file:\n%s", list)
	}
	if !strings.Contains(list, "open.csv") {
		t.Errorf("the anonymous listing lacks open.csv:\n%s", list)
	}
}

// TestPutToDropBox: largo put, with no protocol named, uploads to a
// drop-box link (the tus endpoint is closed to links, so it speaks the
// IETF protocol at the link's URL), and never replaces a file there.
func TestPutToDropBox(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	s := belowServer(t, g)
	drop := shareLink(t, g, s, "/m", "--write")
	src := filepath.Join(t.TempDir(), "up.bin")
	sum := writeRandom(t, src, 5<<20, 7)
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	if code, out, stderr := runLargo(t, env, "put", src, drop+"up.bin"); code != 0 {
		t.Fatalf("largo put to a drop box: exit %d\n%s\n%s", code, out, stderr)
	}
	if got := fileSHA(t, filepath.Join(g.dir, "m", "up.bin")); got != sum {
		t.Errorf("the uploaded file's sha-256 is %s; want %s", got, sum)
	}
	if code, _, stderr := runLargo(t, env, "put", src, drop+"ok.txt"); code != 1 || !strings.Contains(stderr, "412") {
		t.Errorf("largo put over a file through a drop box: exit %d, %s; want exit 1 and a 412", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(g.dir, "m", "ok.txt")); string(b) != "ok" {
		t.Errorf("the drop box replaced ok.txt: %q", b)
	}
}
