//go:build e2e

package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/links"
)

// The share key is made with the first link, wherever it is made, and a
// running server finds it and the links made beside it without a restart;
// links made by earlier builds keep working.

// readOnlyServer starts largo on g with an access file that grants no
// writes: everyone reads /pub, alice (a token) reads everything, and
// nobody may write. The server starts with no share key.
func readOnlyServer(t *testing.T, g *target) *server {
	t.Helper()
	file := writeAccessFile(t, `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]

[[rule]]
path = "/"
users = ["*"]
allow = []

[[rule]]
path = "/pub"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/"
users = ["alice"]
allow = ["read", "list"]
`)
	g.seed(t, "pub/a.txt", "public")
	g.seed(t, "private/s.txt", "secret")
	if g.srv == nil {
		return startServer(t, g.dir, "--access", file)
	}
	return startS3Largo(t, g.srv, "", "--access", file)
}

// noShareKey fails the test if g's state area holds a share key.
func noShareKey(t *testing.T, g *target) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(g.dir, ".largo", links.KeyName)); !os.IsNotExist(err) {
		t.Fatalf("a share key before any link: %v", err)
	}
}

// TestShareBesideRunningServer: largo share run beside a server started
// with no writes (so with no share key) prints a link that server
// answers within links.CacheTTL, with no restart, though it looked for a
// key a moment before and found none; on a folder and on a bucket.
func TestShareBesideRunningServer(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		g.seed(t, "pub/a.txt", "public")
		g.seed(t, "pub/sub/b.txt", "below")
		var s *server
		if g.srv == nil {
			s = startServer(t, g.dir)
		} else {
			s = startS3Largo(t, g.srv, "")
		}
		noShareKey(t, g)
		// A request through a link before there is any key: refused,
		// and the server now knows there is none.
		stray := "v2.AAAAAAAAAAAAAAAAAAAAAA." + strings.Repeat("A", 43)
		if resp, body := send(t, "GET", s.URL+"_largo/s/"+stray+"/", nil, 0); resp.StatusCode != 403 {
			t.Errorf("a link before any key: %d %q; want 403", resp.StatusCode, body)
		}
		file := shareLink(t, g, s, "/pub/a.txt")
		folder := shareLink(t, g, s, "/pub")
		for link, want := range map[string]string{file: "public", folder + "sub/b.txt": "below"} {
			var code int
			var body string
			ok := poll.Until(links.CacheTTL+2*time.Second, 50*time.Millisecond, func() bool {
				resp, b := send(t, "GET", link, nil, 0)
				code, body = resp.StatusCode, b
				return code == 200
			})
			if !ok || body != want {
				t.Errorf("GET %s within %v of largo share: %d %q; want 200 %q", link, links.CacheTTL, code, body, want)
			}
		}
	})
}

// TestPageShareWithoutWrites: on a server whose rules grant no writes,
// a user who may read makes a read link from the page, and it works; a
// drop box still needs the right to write, and nobody shares what they
// may not read.
func TestPageShareWithoutWrites(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		s := readOnlyServer(t, g)
		noShareKey(t, g)
		alice := []string{"Authorization", "Bearer alice-token-0123456789", "Content-Type", "application/x-www-form-urlencoded"}
		share := func(form string, who []string) (int, string) {
			resp, body := send(t, "POST", s.URL+"_largo/share", strings.NewReader(form), int64(len(form)), who...)
			return resp.StatusCode, body
		}
		code, body := share("path=/private/s.txt&expires=1h", alice)
		if code != 201 {
			t.Fatalf("alice shares a file she may read: %d %q; want 201", code, body)
		}
		var made struct{ URL string }
		if err := json.Unmarshal([]byte(body), &made); err != nil || !strings.HasPrefix(made.URL, links.URLPrefix) {
			t.Fatalf("the link made: %q, %v", body, err)
		}
		if resp, got := send(t, "GET", strings.TrimSuffix(s.URL, "/")+made.URL, nil, 0); resp.StatusCode != 200 || got != "secret" {
			t.Errorf("the link alice made: %d %q", resp.StatusCode, got)
		}
		if resp, body := send(t, "GET", s.URL+"_largo/links/", nil, 0, alice[:2]...); resp.StatusCode != 200 || !strings.Contains(body, made.URL) {
			t.Errorf("alice's links: %d %q", resp.StatusCode, body)
		}
		if code, body := share("path=/pub&expires=1h&write=1", alice); code != 403 {
			t.Errorf("a drop box where nobody writes: %d %q; want 403", code, body)
		}
		if code, body := share("path=/private/s.txt&expires=1h", []string{"Content-Type", "application/x-www-form-urlencoded"}); code != 401 {
			t.Errorf("an anonymous share: %d %q; want 401", code, body)
		}
	})
}

// TestOldLinkRecords: a share key, a link and its download count written
// by the release before links had a package of their own (its formats,
// written here by hand) keep working after the upgrade: the link answers
// with its password, and its count goes on from where it was.
func TestOldLinkRecords(t *testing.T) {
	forEachTarget(t, func(t *testing.T, g *target) {
		g.seed(t, "docs/a.txt", "kept")
		key := "0123456789abcdef0123456789abcdef"
		id := "YW4gb2xkIGxpbmssIHYyLg"
		mac := func(msg string) []byte {
			m := hmac.New(sha256.New, []byte(key))
			m.Write([]byte(msg))
			return m.Sum(nil)
		}
		token := "v2." + id + "." + base64.RawURLEncoding.EncodeToString(mac("v2."+id))
		g.seed(t, ".largo/share.key", key)
		g.seed(t, ".largo/links/"+id, `{"id":"`+id+`","kind":"file","path":"docs/a.txt","created":"2025-01-01T00:00:00Z","expires":"`+
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`","password":"`+hex.EncodeToString(mac("password\x00"+id+"\x00open sesame"))+`","max_downloads":3}`)
		g.seed(t, ".largo/downloads/"+id, `{"used":2}`)
		var s *server
		if g.srv == nil {
			s = startServer(t, g.dir)
		} else {
			s = startS3Largo(t, g.srv, "")
		}
		link := s.URL + "_largo/s/" + token + "/a.txt"
		if resp, _ := send(t, "GET", link, nil, 0); resp.StatusCode != 401 {
			t.Errorf("the old link without its password: %d; want 401", resp.StatusCode)
		}
		pw := []string{"Authorization", "Basic " + basic("", "open sesame")}
		if resp, body := send(t, "GET", link, nil, 0, pw...); resp.StatusCode != 200 || body != "kept" {
			t.Errorf("the old link: %d %q", resp.StatusCode, body)
		}
		if resp, body := send(t, "GET", link, nil, 0, pw...); resp.StatusCode != 410 {
			t.Errorf("its fourth download of three: %d %q; want 410", resp.StatusCode, body)
		}
	})
}
