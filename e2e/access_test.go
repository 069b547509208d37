//go:build e2e

package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The access tests run the real binary with an access file, on a folder
// and on a bucket, and check every rule with the Go client and with real
// clients that nobody here wrote: curl, wget, aria2c and rclone.

const (
	alicePassword = "alice-password-1"
	botToken      = "bot-token-0123456789"
)

// accessServer starts largo on g with an access file: everyone reads and
// lists but /private, which alice (a password) may do everything in; the
// bot (a token) may write into /inbox and nothing more there.
func accessServer(t *testing.T, g *target, extra ...string) (*server, string) {
	t.Helper()
	cmd := exec.Command(largoBin, "passwd")
	cmd.Stdin = strings.NewReader(alicePassword + "\n")
	hash, err := cmd.Output()
	if err != nil {
		t.Fatalf("largo passwd: %v", err)
	}
	file := writeAccessFile(t, fmt.Sprintf(`
[[user]]
name = "alice"
password = %q

[[user]]
name = "bot"
tokens = [%q]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/private"
users = ["*"]
allow = []

[[rule]]
path = "/private"
users = ["alice"]
allow = ["all"]

[[rule]]
path = "/inbox"
users = ["bot"]
allow = ["write"]
`, strings.TrimSpace(string(hash)), botToken))
	g.seed(t, "pub/a.txt", "public")
	g.seed(t, "private/s.txt", "secret")
	g.seed(t, "private/deep/t.txt", "deeper")
	g.seed(t, "inbox/old.txt", "old")
	args := append([]string{"--access", file}, extra...)
	if g.srv == nil {
		return startServer(t, g.dir, args...), file
	}
	return startS3Largo(t, g.srv, "", args...), file
}

func TestAccessRules(t *testing.T) { forEachTarget(t, accessRules) }

func accessRules(t *testing.T, g *target) {
	s, _ := accessServer(t, g)
	alice := []string{"Authorization", "Basic " + basic("alice", alicePassword)}
	bot := []string{"Authorization", "Bearer " + botToken}
	for _, tt := range []struct {
		method, path string
		hdr          []string
		code         int
	}{
		{"GET", "pub/a.txt", nil, 200},
		{"GET", "private/s.txt", nil, 401},
		{"GET", "private/s.txt", bot, 403},
		{"GET", "private/s.txt", alice, 200},
		{"GET", "private/deep/t.txt", alice, 200},
		{"GET", "private/", bot, 403},
		{"PUT", "pub/new.txt", nil, 401},
		{"PUT", "pub/new.txt", bot, 403},
		{"PUT", "inbox/new.txt", bot, 201},
		{"GET", "inbox/new.txt", bot, 403},
		{"DELETE", "inbox/new.txt", bot, 403},
		{"PUT", "private/new.txt", alice, 201},
		{"DELETE", "private/new.txt", alice, 204},
		{"GET", "private/s.txt", []string{"Authorization", "Basic " + basic("alice", "wrong")}, 401},
	} {
		var body io.Reader
		size := int64(0)
		if tt.method == "PUT" {
			body, size = strings.NewReader("new"), 3
		}
		resp, text := send(t, tt.method, s.URL+tt.path, body, size, tt.hdr...)
		if resp.StatusCode != tt.code {
			t.Errorf("%s /%s with %v: %d %s; want %d", tt.method, tt.path, tt.hdr, resp.StatusCode, text, tt.code)
		}
	}
	// Listings and archives leave out what the requester may not read.
	_, root := send(t, "GET", s.URL, nil, 0, "Accept", "application/json")
	if strings.Contains(root, `"private"`) || !strings.Contains(root, `"pub"`) {
		t.Errorf("anonymous listing: %s", root)
	}
	_, root = send(t, "GET", s.URL, nil, 0, append([]string{"Accept", "application/json"}, alice...)...)
	if !strings.Contains(root, `"private"`) {
		t.Errorf("alice's listing: %s", root)
	}
	_, tar := send(t, "GET", s.URL+"?archive=tar", nil, 0)
	if strings.Contains(tar, "secret") || !strings.Contains(tar, "public") {
		t.Error("the anonymous archive holds what anonymous may not read")
	}

	// Real clients sign in.
	dst := t.TempDir()
	out := filepath.Join(dst, "curl.txt")
	if b, err := exec.Command("curl", "-sf", "-u", "alice:"+alicePassword, "-o", out, s.URL+"private/s.txt").CombinedOutput(); err != nil {
		t.Errorf("curl -u: %v %s", err, b)
	}
	need(t, "wget")
	if b, err := exec.Command("wget", "-q", "--user", "alice", "--password", alicePassword, "-O", filepath.Join(dst, "wget.txt"), s.URL+"private/s.txt").CombinedOutput(); err != nil {
		t.Errorf("wget --user: %v %s", err, b)
	}
	need(t, "aria2c")
	if b, err := exec.Command("aria2c", "-q", "--http-user", "alice", "--http-passwd", alicePassword, "-d", dst, "-o", "aria2.txt", s.URL+"private/s.txt").CombinedOutput(); err != nil {
		t.Errorf("aria2c --http-user: %v %s", err, b)
	}
	for _, name := range []string{"curl.txt", "wget.txt", "aria2.txt"} {
		if b, _ := os.ReadFile(filepath.Join(dst, name)); string(b) != "secret" {
			t.Errorf("%s holds %q", name, b)
		}
	}
	// Without the password, no client gets the file.
	if b, err := exec.Command("curl", "-sf", s.URL+"private/s.txt").CombinedOutput(); err == nil {
		t.Errorf("curl without a password got %q", b)
	}

	// A share link, made with largo share on the same store, read by
	// rclone's http backend: the folder and below, nothing beside it.
	link := shareLink(t, g, s, "/private", "--expires", "1h")
	need(t, "rclone")
	lsf, err := exec.Command("rclone", "lsf", "-R", "--http-url", link, ":http:").CombinedOutput()
	if err != nil || !strings.Contains(string(lsf), "s.txt") || !strings.Contains(string(lsf), "deep/t.txt") {
		t.Errorf("rclone lsf of a share link: %v\n%s", err, lsf)
	}
	if b, err := exec.Command("rclone", "copy", "--http-url", link, ":http:", filepath.Join(dst, "rclone")).CombinedOutput(); err != nil {
		t.Errorf("rclone copy: %v %s", err, b)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "rclone", "deep", "t.txt")); string(b) != "deeper" {
		t.Errorf("rclone copied %q", b)
	}
	if g.srv != nil {
		// A second instance on the bucket takes the same link: the key
		// lives in the bucket.
		s2, _ := accessServer(t, g)
		if resp, body := send(t, "GET", s2.URL+strings.TrimPrefix(link, s.URL)+"s.txt", nil, 0); resp.StatusCode != 200 || body != "secret" {
			t.Errorf("the link on a second instance: %d %q", resp.StatusCode, body)
		}
	}
	if resp, _ := send(t, "GET", strings.TrimSuffix(link, "/")+"/../pub/a.txt", nil, 0); resp.StatusCode == 200 {
		t.Error("a share link reached beside its folder")
	}
	drop := shareLink(t, g, s, "/inbox", "--write")
	if resp, _ := send(t, "PUT", drop+"dropped.txt", strings.NewReader("d"), 1); resp.StatusCode != 201 {
		t.Errorf("drop box PUT: %d", resp.StatusCode)
	}
	if resp, _ := send(t, "PUT", drop+"old.txt", strings.NewReader("x"), 1); resp.StatusCode != 412 {
		t.Errorf("drop box overwrite: %d; want 412", resp.StatusCode)
	}
	if resp, _ := send(t, "GET", drop+"old.txt", nil, 0); resp.StatusCode != 403 {
		t.Errorf("drop box read: %d; want 403", resp.StatusCode)
	}
}

// shareLink runs largo share for path on g's store, addressed to s.
func shareLink(t *testing.T, g *target, s *server, path string, args ...string) string {
	t.Helper()
	args = append([]string{"share", path, "--url", strings.TrimSuffix(s.URL, "/")}, args...)
	cmd := exec.Command(largoBin, args...)
	if g.srv == nil {
		cmd.Args = append(cmd.Args, "--dir", g.dir)
	} else {
		cmd.Args = append(cmd.Args, "--store", "s3://"+g.srv.Bucket+"/")
		cmd.Env = append(os.Environ(), g.srv.Env()...)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("largo share: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func basic(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// TestSafeByDefault: a loopback server answers loopback names only; a
// browser's cross-site write is refused; guessing meets 429; a token read
// from a file is in no process listing.
func TestSafeByDefault(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "token-from-a-file-0123456789"
	os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
	s := startServer(t, dir, "--token-file", tokenFile)
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.PID)); err != nil || bytes.Contains(cmdline, []byte(token)) {
		t.Errorf("the token is in the command line (%v)", err)
	}
	if code := rawHost(t, s.Addr, "attacker.example"); code != 421 {
		t.Errorf("rebinding Host: %d; want 421", code)
	}
	if code := rawHost(t, s.Addr, "localhost:1234"); code != 200 {
		t.Errorf("Host localhost: %d; want 200", code)
	}
	auth := []string{"Authorization", "Bearer " + token}
	if resp, _ := send(t, "PUT", s.URL+"b.txt", strings.NewReader("b"), 1, auth...); resp.StatusCode != 201 {
		t.Errorf("PUT with the token from the file: %d", resp.StatusCode)
	}
	if resp, _ := send(t, "PUT", s.URL+"c.txt", strings.NewReader("c"), 1, append([]string{"Origin", "https://evil.example"}, auth...)...); resp.StatusCode != 403 {
		t.Errorf("cross-origin PUT: %d; want 403", resp.StatusCode)
	}
	if resp, _ := send(t, "OPTIONS", s.URL+"_largo/uploads/", nil, 0, "Origin", "https://evil.example", "Access-Control-Request-Method", "POST"); resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("tus preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}
	var last int
	for i := range 12 {
		resp, _ := send(t, "GET", s.URL+"a.txt", nil, 0, "Authorization", fmt.Sprintf("Bearer guess-%d", i))
		last = resp.StatusCode
	}
	if last != 429 {
		t.Errorf("after 12 wrong tokens: %d; want 429", last)
	}
	if !waitFor(5*time.Second, func() bool {
		resp, _ := send(t, "GET", s.URL+"a.txt", nil, 0, auth...)
		return resp.StatusCode == 200
	}) {
		t.Error("the right token is refused for good after the guesses")
	}
}

// rawHost sends GET /a.txt with a Host header of its own, and returns the
// status.
func rawHost(t *testing.T, addr, host string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/a.txt", nil)
	req.Host = host
	c := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{}).DialContext}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAccessReload: SIGHUP puts a changed access file in force without
// cutting a download in flight; a file with a mistake changes nothing.
func TestAccessReload(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	writeRandom(t, filepath.Join(g.dir, "pub", "big.bin"), 64<<20, 1)
	s, file := accessServer(t, g, "--idle-timeout", "30s")
	resp, err := http.Get(s.URL + "pub/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1<<20)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	text, _ := os.ReadFile(file)
	os.WriteFile(file, []byte(strings.Replace(string(text), `allow = ["read", "list"]`, `allow = ["list"]`, 1)), 0o600)
	s.signal(syscall.SIGHUP)
	if !waitFor(5*time.Second, func() bool {
		r, _ := send(t, "GET", s.URL+"pub/a.txt", nil, 0)
		return r.StatusCode == 401
	}) {
		t.Fatal("the reloaded rules are not in force")
	}
	if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != 63<<20 {
		t.Errorf("the download in flight: %d more bytes, %v", n, err)
	}
	os.WriteFile(file, []byte("[[rule]]\npath = 42\n"), 0o600)
	s.signal(syscall.SIGHUP)
	if !waitFor(5*time.Second, func() bool { return strings.Contains(s.stderr.String(), "not reloaded") }) {
		t.Error("a broken access file was not reported")
	}
	if r, _ := send(t, "GET", s.URL+"pub/a.txt", nil, 0); r.StatusCode != 401 {
		t.Errorf("after a broken file: %d; want the rules before it (401)", r.StatusCode)
	}
}
