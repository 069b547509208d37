//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The DAV methods that act on a whole folder (COPY, MOVE, a LOCK of
// Depth infinity) or remove what they overwrite must not reach past the
// access rules below the names they were sent to, and share links pass
// through them only what the link allows.

const (
	carolToken = "carol-token-0123456789"
	bobToken   = "bob-token-0123456789"
	aliceToken = "alice-token-0123456789"
)

// rulesServer starts largo with WebDAV on a folder where carol may do
// everything but in /mixed/secret (alice's alone) and /m3/secret (read
// and list for everyone), and bob reads, lists and writes /pub.
func rulesServer(t *testing.T, g *target) *server {
	t.Helper()
	file := writeAccessFile(t, `
[[user]]
name = "carol"
tokens = ["`+carolToken+`"]

[[user]]
name = "bob"
tokens = ["`+bobToken+`"]

[[user]]
name = "alice"
tokens = ["`+aliceToken+`"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/"
users = ["carol"]
allow = ["all"]

[[rule]]
path = "/mixed/secret"
users = ["*"]
allow = []

[[rule]]
path = "/mixed/secret"
users = ["alice"]
allow = ["all"]

[[rule]]
path = "/m3/secret"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/pub"
users = ["bob"]
allow = ["read", "list", "write"]
`)
	for name, content := range map[string]string{
		"top.txt":             "top",
		"mixed/a.txt":         "a",
		"mixed/secret/x.txt":  "secret",
		"m3/secret/keep.txt":  "keep",
		"src/a.txt":           "a",
		"src/secret/evil.txt": "evil",
		"free/f.txt":          "free",
		"pub/f.txt":           "old",
		"pub/d.txt":           "owned",
		"pub/m/important.txt": "important",
	} {
		g.seed(t, name, content)
	}
	args := []string{"--upload", "--webdav", "--access", file}
	if g.srv == nil {
		return startServer(t, g.dir, args...)
	}
	return startS3Largo(t, g.srv, "", args...)
}

const lockBody = `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`

// TestDAVRulesBelow: COPY, MOVE and LOCK are refused (403, nothing
// changed) when a rule below the source or the destination takes away a
// permission they need there; what no rule protects goes as before, on a
// folder and on a bucket.
func TestDAVRulesBelow(t *testing.T) {
	need(t, "curl")
	forEachTarget(t, davRulesBelow)
}

func davRulesBelow(t *testing.T, g *target) {
	s := rulesServer(t, g)
	carol := "Authorization: Bearer " + carolToken
	bob := "Authorization: Bearer " + bobToken
	alice := "Authorization: Bearer " + aliceToken
	for _, tt := range []struct {
		what string
		args []string
		want string
	}{
		{"MOVE of a folder over a secret", []string{"-X", "MOVE", "-H", carol, "-H", "Destination: " + s.URL + "mixed2/", s.URL + "mixed/"}, "403"},
		{"COPY of a folder over a secret", []string{"-X", "COPY", "-H", carol, "-H", "Destination: " + s.URL + "mixed3/", s.URL + "mixed/"}, "403"},
		{"COPY of a folder into a read-only folder", []string{"-X", "COPY", "-H", carol, "-H", "Destination: " + s.URL + "m3/", s.URL + "src/"}, "403"},
		{"COPY over a folder without delete", []string{"-X", "COPY", "-H", bob, "-H", "Overwrite: T", "-H", "Destination: " + s.URL + "pub/m", s.URL + "top.txt"}, "403"},
		{"MOVE over a folder holding a read-only one", []string{"-X", "MOVE", "-H", carol, "-H", "Destination: " + s.URL + "m3", s.URL + "free/f.txt"}, "403"},
		{"LOCK of Depth infinity over a secret", []string{"-X", "LOCK", "-H", carol, "--data", lockBody, s.URL + "mixed/"}, "403"},
		{"COPY of a file onto a file: write suffices, as for PUT", []string{"-X", "COPY", "-H", bob, "-H", "Overwrite: T", "-H", "Destination: " + s.URL + "pub/f.txt", s.URL + "top.txt"}, "204"},
		{"COPY of a folder no rule protects", []string{"-X", "COPY", "-H", carol, "-H", "Destination: " + s.URL + "copied/", s.URL + "src/"}, "201"},
		{"MOVE of a folder no rule protects", []string{"-X", "MOVE", "-H", carol, "-H", "Destination: " + s.URL + "moved/", s.URL + "copied/"}, "201"},
		{"LOCK of Depth 0 on the folder", []string{"-X", "LOCK", "-H", carol, "-H", "Depth: 0", "--data", lockBody, s.URL + "mixed/"}, "200"},
		{"PUT below the Depth-0 lock", []string{"-X", "PUT", "-H", alice, "--data-binary", "n", s.URL + "mixed/secret/n.txt"}, "201"},
	} {
		if got := curlStatus(t, tt.args...); got != tt.want {
			t.Errorf("%s: %s; want %s", tt.what, got, tt.want)
		}
	}
	for name, want := range map[string]string{
		"mixed/secret/x.txt":    "secret",
		"pub/m/important.txt":   "important",
		"pub/f.txt":             "top",
		"free/f.txt":            "free",
		"m3/secret/keep.txt":    "keep",
		"moved/secret/evil.txt": "evil",
	} {
		if b, err := os.ReadFile(filepath.Join(g.dir, name)); err != nil || string(b) != want {
			t.Errorf("/%s: %q, %v; want %q", name, b, err, want)
		}
	}
	for _, name := range []string{"mixed2", "mixed3", "m3/secret/evil.txt", "m3/a.txt", "copied"} {
		if _, err := os.Stat(filepath.Join(g.dir, name)); err == nil {
			t.Errorf("/%s is there", name)
		}
	}
	if got := curlStatus(t, s.URL+"mixed2/secret/x.txt"); got != "404" {
		t.Errorf("anonymous GET /mixed2/secret/x.txt: %s; want 404", got)
	}
	g.clean(t)
}

// TestDAVLockTimeout: a LOCK answers the timeout it granted: the longest
// a lock may live when none or a longer one was asked for.
func TestDAVLockTimeout(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--upload", "--webdav", "--token", testToken)
	for i, asked := range []string{"", "Infinite", "Second-86400", "Second-60"} {
		hdr := append([]string{"Depth", "0"}, bearer...)
		if asked != "" {
			hdr = append(hdr, "Timeout", asked)
		}
		name := "t" + string(rune('a'+i)) + ".txt"
		resp, text := send(t, "LOCK", s.URL+name, strings.NewReader(lockBody), int64(len(lockBody)), hdr...)
		want := "<D:timeout>Second-3600</D:timeout>"
		if asked == "Second-60" {
			want = "<D:timeout>Second-60</D:timeout>"
		}
		if resp.StatusCode != 201 || !strings.Contains(text, want) {
			t.Errorf("LOCK with Timeout %q: %d\n%s\nwant 201 and %s", asked, resp.StatusCode, text, want)
		}
	}
}

// TestShareLinksDAV: a drop-box link only creates files (PUT), so every
// DAV method through it is refused and changes nothing; a read link
// lets through only the methods that read, and does not offer the others.
func TestShareLinksDAV(t *testing.T) {
	need(t, "curl")
	g := &target{kind: "disk", dir: t.TempDir()}
	s := rulesServer(t, g)
	bob := "Authorization: Bearer " + bobToken
	drop := shareLink(t, g, s, "/pub", "--write")
	read := shareLink(t, g, s, "/pub")
	patch := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:x xmlns:Z="urn:t">1</Z:x></D:prop></D:set></D:propertyupdate>`
	for _, link := range []struct{ kind, url string }{{"drop-box", drop}, {"read", read}} {
		for _, tt := range []struct {
			what string
			args []string
		}{
			{"LOCK of a file", []string{"-X", "LOCK", "--data", lockBody, link.url + "d.txt"}},
			{"LOCK of a missing name", []string{"-X", "LOCK", "--data", lockBody, link.url + "l.txt"}},
			{"PROPPATCH", []string{"-X", "PROPPATCH", "--data", patch, link.url + "d.txt"}},
			{"MKCOL", []string{"-X", "MKCOL", link.url + "newdir"}},
			{"COPY", []string{"-X", "COPY", "-H", "Destination: " + link.url + "c.txt", link.url + "d.txt"}},
			{"MOVE", []string{"-X", "MOVE", "-H", "Destination: " + link.url + "c.txt", link.url + "d.txt"}},
			{"UNLOCK", []string{"-X", "UNLOCK", "-H", "Lock-Token: <opaquelocktoken:00000000-0000-4000-8000-000000000000/_pub/d.txt>", link.url + "d.txt"}},
			{"DELETE", []string{"-X", "DELETE", link.url + "d.txt"}},
		} {
			if got := curlStatus(t, tt.args...); got != "403" {
				t.Errorf("%s link, %s: %s; want 403", link.kind, tt.what, got)
			}
		}
	}
	if got := curlStatus(t, "-X", "PUT", "-H", bob, "--data-binary", "bob's", s.URL+"pub/d.txt"); got != "204" {
		t.Errorf("the owner's PUT after the link's LOCK: %s; want 204", got)
	}
	for _, name := range []string{"pub/l.txt", "pub/newdir", "pub/c.txt"} {
		if _, err := os.Stat(filepath.Join(g.dir, name)); err == nil {
			t.Errorf("/%s is there", name)
		}
	}
	if got := curlStatus(t, "-X", "PUT", "--data-binary", "new", drop+"new.txt"); got != "201" {
		t.Errorf("drop-box PUT of a new file: %s; want 201", got)
	}
	if got := curlStatus(t, "-X", "PROPFIND", "-H", "Depth: 1", read); got != "207" {
		t.Errorf("read link, PROPFIND of Depth 1: %s; want 207", got)
	}
	resp, _ := send(t, "OPTIONS", read+"d.txt", nil, 0)
	if allow := resp.Header.Get("Allow"); resp.StatusCode != 204 || !strings.Contains(allow, "PROPFIND") ||
		strings.Contains(allow, "PUT") || strings.Contains(allow, "LOCK") || strings.Contains(allow, "DELETE") || strings.Contains(allow, "MOVE") {
		t.Errorf("read link, OPTIONS: %d, Allow %q; want 204 and only the reading methods", resp.StatusCode, allow)
	}
	if dav := resp.Header.Get("DAV"); dav != "1" {
		t.Errorf("read link, OPTIONS: DAV %q; want 1 (no locks)", dav)
	}
}
