//go:build e2e

package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	clientPassword = "ann-password-42"
	linkPassword   = "link-password-77"
)

// secretsIn fails the test when any file below dirs, or any of outputs,
// holds one of secrets.
func secretsIn(t *testing.T, secrets []string, outputs []string, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(p, ".part") {
				return nil
			}
			b, _ := os.ReadFile(p)
			outputs = append(outputs, p+": "+string(b))
			return nil
		})
	}
	for _, o := range outputs {
		for _, s := range secrets {
			if strings.Contains(o, s) {
				t.Fatalf("a password shows: %q", o)
			}
		}
	}
}

// TestClientPasswords: largo get and put as a user with a password, and
// through share links with a password (a file's, and a drop box), each
// interrupted and resumed: the password comes from a file, a variable or
// the URL, the command printed to resume names where, and neither the
// output nor a state file (FILE.part.json, the upload state) holds it.
func TestClientPasswords(t *testing.T) {
	dir := t.TempDir()
	const size = 256 << 20
	want := writeRandom(t, filepath.Join(dir, "private", "big.bin"), size, 71)
	os.MkdirAll(filepath.Join(dir, "inbox"), 0o755)
	access := writeAccessFile(t, `
[[user]]
name = "ann"
password = "ANN_HASH"

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/private"
users = ["ann"]
allow = ["all"]
`)
	b, _ := os.ReadFile(access)
	os.WriteFile(access, []byte(strings.ReplaceAll(string(b), "ANN_HASH", passwdHash(t, clientPassword))), 0o600)
	s := startServer(t, dir, "--access", access)
	cache, out := t.TempDir(), t.TempDir()
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(clientPassword+"\n"), 0o600)
	linkFile := filepath.Join(t.TempDir(), "link-pw")
	os.WriteFile(linkFile, []byte(linkPassword+"\n"), 0o600)
	secrets := []string{clientPassword, linkPassword}
	var outputs []string
	// interrupted runs largo until it has moved some bytes, stops it with
	// SIGINT, and returns what it printed, which must name a resume.
	interrupted := func(env []string, args ...string) string {
		t.Helper()
		c := startClientEnv(t, append([]string{"XDG_CACHE_HOME=" + cache}, env...), args...)
		if code := c.stopAfter(t, size/4, syscall.SIGINT); code != 3 {
			t.Fatalf("largo %v, interrupted: exit %d: %s", args, code, c.stderr.String())
		}
		outputs = append(outputs, c.stderr.String())
		return c.stderr.String()
	}
	finished := func(env []string, args ...string) string {
		t.Helper()
		c := startClientEnv(t, append([]string{"XDG_CACHE_HOME=" + cache}, env...), args...)
		if code := c.wait(t, 120*time.Second); code != 0 {
			t.Fatalf("largo %v: exit %d: %s", args, code, c.stderr.String())
		}
		outputs = append(outputs, c.stderr.String())
		return c.stderr.String()
	}

	// A user, the password from $LARGO_PASSWORD.
	got := filepath.Join(out, "user.bin")
	stderr := interrupted([]string{"LARGO_PASSWORD=" + clientPassword}, "get", s.URL+"private/big.bin", "-o", got, "--user", "ann")
	if !strings.Contains(stderr, `LARGO_PASSWORD="$LARGO_PASSWORD" largo get`) || !strings.Contains(stderr, "--user ann") {
		t.Errorf("the resume command: %s", stderr)
	}
	secretsIn(t, secrets, outputs, out, cache)
	finished([]string{"LARGO_PASSWORD=" + clientPassword}, "get", s.URL+"private/big.bin", "-o", got, "--user", "ann")
	if fileSHA(t, got) != want {
		t.Fatal("the user's download differs")
	}

	// The same user uploads, the password from a file.
	stderr = interrupted(nil, "put", filepath.Join(dir, "private", "big.bin"), s.URL+"private/up/", "--user", "ann", "--password-file", pwFile)
	if !strings.Contains(stderr, "--user ann --password-file "+pwFile) {
		t.Errorf("the resume command: %s", stderr)
	}
	secretsIn(t, secrets, outputs, cache)
	finished(nil, "put", filepath.Join(dir, "private", "big.bin"), s.URL+"private/up/", "--user", "ann", "--password-file", pwFile)
	if fileSHA(t, filepath.Join(dir, "private", "up", "big.bin")) != want {
		t.Fatal("the user's upload differs")
	}
	// No password and no terminal to ask on: a usage error, at once.
	if code, _, stderr := runLargo(t, nil, "get", s.URL+"private/big.bin", "-o", filepath.Join(out, "x"), "--user", "ann"); code != 2 || !strings.Contains(stderr, "--password-file") {
		t.Errorf("--user without a password: exit %d: %s", code, stderr)
	}

	// A password link to the file, the password in the URL, then from
	// $LARGO_LINK_PASSWORD.
	code, link, stderr := runLargo(t, []string{"LARGO_LINK_PASSWORD=" + linkPassword}, "share", "/private/big.bin", "--password", "--dir", dir, "--access", access, "--url", strings.TrimSuffix(s.URL, "/"))
	link = strings.TrimSpace(link)
	if code != 0 || !strings.HasPrefix(link, "http://") {
		t.Fatalf("largo share --password: exit %d: %s", code, stderr)
	}
	got = filepath.Join(out, "link.bin")
	if code, _, stderr := runLargo(t, nil, "get", link, "-o", got); code != 1 || !strings.Contains(stderr, "--link-password-file") || !strings.Contains(stderr, "LARGO_LINK_PASSWORD") {
		t.Errorf("a password link without it: exit %d: %s", code, stderr)
	}
	withPass := strings.Replace(link, "http://", "http://any:"+linkPassword+"@", 1)
	stderr = interrupted(nil, "get", withPass, "-o", got)
	if !strings.Contains(stderr, "largo get "+link) {
		t.Errorf("the resume command: %s", stderr)
	}
	secretsIn(t, secrets, outputs, out, cache)
	finished([]string{"LARGO_LINK_PASSWORD=" + linkPassword}, "get", link, "-o", got)
	if fileSHA(t, got) != want {
		t.Fatal("the link's download differs")
	}

	// A password drop box, the password from a file.
	code, drop, stderr := runLargo(t, nil, "share", "/inbox", "--write", "--password", "--link-password-file", linkFile, "--dir", dir, "--access", access, "--url", strings.TrimSuffix(s.URL, "/"))
	if code != 0 {
		t.Fatalf("largo share --write --password: exit %d: %s", code, stderr)
	}
	drop = strings.TrimSpace(drop)
	stderr = interrupted(nil, "put", filepath.Join(dir, "private", "big.bin"), drop, "--link-password-file", linkFile)
	if !strings.Contains(stderr, "--link-password-file "+linkFile) {
		t.Errorf("the resume command: %s", stderr)
	}
	secretsIn(t, secrets, outputs, cache)
	finished(nil, "put", filepath.Join(dir, "private", "big.bin"), drop, "--link-password-file", linkFile)
	if fileSHA(t, filepath.Join(dir, "inbox", "big.bin")) != want {
		t.Fatal("the drop box's upload differs")
	}
	secretsIn(t, secrets, outputs, out, cache)
}

// TestClientCACert: largo get and put to a server whose certificate is
// self-signed fail with a word on --cacert; with --cacert its
// certificate they work, and with --insecure too, saying so.
func TestClientCACert(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "t.bin"), 1<<20, 72)
	certFile, keyFile, _ := selfSigned(t)
	s := startServer(t, dir, "--tls-cert", certFile, "--tls-key", keyFile, "--upload", "--token", testToken)
	out := t.TempDir()
	cache := t.TempDir()
	if code, stderr := runClient(t, cache, "get", s.URL+"t.bin", "-o", filepath.Join(out, "a")); code != 1 || !strings.Contains(stderr, "--cacert") {
		t.Errorf("an untrusted certificate: exit %d: %s", code, stderr)
	}
	if code, stderr := runClient(t, cache, "get", s.URL+"t.bin", "-o", filepath.Join(out, "a"), "--cacert", certFile); code != 0 || fileSHA(t, filepath.Join(out, "a")) != want {
		t.Errorf("get --cacert: exit %d: %s", code, stderr)
	}
	if code, stderr := runClient(t, cache, "get", s.URL+"t.bin", "-o", filepath.Join(out, "b"), "--insecure"); code != 0 || !strings.Contains(stderr, "not checked") || fileSHA(t, filepath.Join(out, "b")) != want {
		t.Errorf("get --insecure: exit %d: %s", code, stderr)
	}
	if code, stderr := runClient(t, cache, "put", filepath.Join(out, "a"), s.URL+"up/", "--cacert", certFile, "--token", testToken); code != 0 || fileSHA(t, filepath.Join(dir, "up", "a")) != want {
		t.Errorf("put --cacert: exit %d: %s", code, stderr)
	}
	if code, stderr := runClient(t, cache, "put", filepath.Join(out, "b"), s.URL+"up/", "--insecure", "--token", testToken); code != 0 || fileSHA(t, filepath.Join(dir, "up", "b")) != want {
		t.Errorf("put --insecure: exit %d: %s", code, stderr)
	}
}
