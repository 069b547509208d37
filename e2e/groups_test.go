//go:build e2e

package e2e

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// restrictedAccess restricts a group the proxy names: contractors get
// nothing on /private, which everyone else reads.
const restrictedAccess = `
[[user]]
name = "carl"
tokens = ["carl-token-of-largo-0123"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/private"
users = ["group:contractors"]
allow = []

[share]
key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

[proxy]
`

// TestProxyGroupsAfterRestart: a user whose groups a trusted proxy names
// (here the test itself, from 127.0.0.1) is a contractor, whom a rule
// refuses /private. After a restart the server does not know his groups
// until the proxy names them again: his token and the share link he
// made must still be refused /private (the rule fails closed), and still
// read the rest; once the proxy says he is in no group, /private is his.
func TestProxyGroupsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"pub.txt": "pub", "private/s.txt": "secret"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	access := filepath.Join(t.TempDir(), "access.toml")
	if err := os.WriteFile(access, []byte(restrictedAccess), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--access", access, "--trusted-proxy", "127.0.0.1", "--identity-header", "Remote-User", "--groups-header", "Remote-Groups"}
	proxied := func(groups string) []string { return []string{"Remote-User", "carl", "Remote-Groups", groups} }
	token := []string{"Authorization", "Bearer carl-token-of-largo-0123"}
	s := startServer(t, dir, args...)

	// carl, in no group, shares the whole tree.
	form := url.Values{"path": {"/"}, "expires": {"1h"}}.Encode()
	resp, text := send(t, "POST", s.URL+"_largo/share", strings.NewReader(form), int64(len(form)), append(proxied(""), "Content-Type", "application/x-www-form-urlencoded")...)
	if resp.StatusCode != 201 {
		t.Fatalf("carl's link: %d %s", resp.StatusCode, text)
	}
	var made struct{ URL string }
	if err := json.Unmarshal([]byte(text), &made); err != nil {
		t.Fatal(err)
	}
	// Then the proxy says he is a contractor.
	check := func(when, target string, want int, hdr ...string) {
		t.Helper()
		resp := get(t, target, hdr...)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: GET %s: %d; want %d", when, strings.TrimPrefix(target, s.URL), resp.StatusCode, want)
		}
	}
	check("a contractor, through the proxy", s.URL+"private/s.txt", 403, proxied("contractors")...)
	check("a contractor, by his token", s.URL+"private/s.txt", 403, token...)

	s.signal(syscall.SIGTERM)
	s.wait(20 * time.Second)
	s = startServer(t, dir, args...)
	link := strings.TrimSuffix(s.URL, "/") + made.URL
	check("after a restart, by his token", s.URL+"private/s.txt", 403, token...)
	check("after a restart, through his link", link+"private/s.txt", 403)
	check("after a restart, by his token, elsewhere", s.URL+"pub.txt", 200, token...)
	check("after a restart, through his link, elsewhere", link+"pub.txt", 200)

	check("in no group, through the proxy", s.URL+"pub.txt", 200, proxied("")...)
	check("in no group, by his token", s.URL+"private/s.txt", 200, token...)
	check("in no group, through his link", link+"private/s.txt", 200)
}
