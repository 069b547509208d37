//go:build e2e

package e2e

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestShareBesideServer: largo share, run beside a server on a port it
// picked, prints a link to that server that works, for a path inside the
// served folder and for the path of the file on this machine; once the
// server has stopped, share says it knows no address.
func TestShareBesideServer(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "a.txt"), []byte("shared"), 0o644)
	s := startServer(t, dir)
	for _, args := range [][]string{
		{"share", "--dir", dir, "/docs/a.txt"},
		{"share", filepath.Join(dir, "docs", "a.txt"), "--expires", "7d"},
		{"share", filepath.Join(dir, "docs")},
	} {
		code, out, stderr := runLargo(t, nil, args...)
		link := strings.TrimSpace(out)
		if code != 0 || !strings.HasPrefix(link, s.URL+"_largo/s/") || stderr != "" {
			t.Fatalf("largo %v: exit %d, %q, %q; want a link on %s", args, code, link, stderr, s.URL)
		}
		if strings.HasSuffix(link, "/") {
			link += "a.txt"
		}
		resp := get(t, link)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "shared" {
			t.Errorf("largo %v: GET %s: %d %q", args, link, resp.StatusCode, body)
		}
	}
	s.signal(syscall.SIGTERM)
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("the server's exit: %d", code)
	}
	code, out, stderr := runLargo(t, nil, "share", "--dir", dir, "/docs/a.txt")
	if code != 0 || !strings.HasPrefix(out, "http://127.0.0.1:8080/") || !strings.Contains(stderr, "--url") {
		t.Errorf("with no server: exit %d, %q, %q", code, out, stderr)
	}
}
