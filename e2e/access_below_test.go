//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A request that acts on a whole folder at once must not reach what a
// rule below the folder protects.

const keeperToken = "keeper-token-0123456789"

// belowServer starts largo on g with an access file where the keeper may
// do everything, except in /m/keep, which everyone only reads and lists.
func belowServer(t *testing.T, g *target, extra ...string) *server {
	t.Helper()
	file := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(file, []byte(`
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
`), 0o600)
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
