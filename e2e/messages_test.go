//go:build e2e

package e2e

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"largo/internal/poll"
)

// TestMessagesSayWhatHappened: each refusal reaches largo put, and the
// log, as what happened: a pre-upload hook's 403 with its own message (on
// tus and a plain PUT), not a word about the token; a drop box's name
// clash as a name taken; a PUT to a folder's name as a folder, and how to
// upload into it; a client that went away as an abort (499), not a 400;
// a full disk at WARN, not ERROR.
func TestMessagesSayWhatHappened(t *testing.T) {
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if strings.Contains(string(b), ".exe") {
			http.Error(w, "no .exe files here, please", http.StatusForbidden)
		}
	}))
	t.Cleanup(hook.Close)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "inbox"), 0o755)
	os.MkdirAll(filepath.Join(dir, "folder"), 0o755)
	s := startServer(t, dir, "--upload", "--token", testToken, "--hook-pre-upload", hook.URL)
	src := t.TempDir()
	exe := filepath.Join(src, "tool.exe")
	os.WriteFile(exe, []byte("MZ"), 0o644)
	txt := filepath.Join(src, "a.txt")
	os.WriteFile(txt, []byte("a"), 0o644)
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "LARGO_TOKEN=" + testToken}
	put := func(args ...string) (int, string) {
		t.Helper()
		c := startClientEnv(t, env, append([]string{"put"}, args...)...)
		code := c.wait(t, 60*time.Second)
		return code, c.stderr.String()
	}

	for _, plain := range []bool{false, true} {
		args := []string{exe, s.URL + "up/"}
		if plain {
			args = append(args, "--plain")
		}
		code, stderr := put(args...)
		if code != 1 || !strings.Contains(stderr, "403") || !strings.Contains(stderr, "no .exe files here, please") || strings.Contains(stderr, "token") {
			t.Errorf("put %v, refused by the hook: exit %d: %s", args, code, stderr)
		}
	}

	code, drop, stderr := runLargo(t, nil, "share", "/inbox", "--write", "--dir", dir)
	if code != 0 {
		t.Fatalf("largo share --write: exit %d: %s", code, stderr)
	}
	drop = strings.TrimSpace(drop)
	if code, stderr := put(txt, drop); code != 0 {
		t.Fatalf("put into the drop box: exit %d: %s", code, stderr)
	}
	if code, stderr := put(txt, drop); code != 1 || !strings.Contains(stderr, "name taken") || strings.Contains(stderr, "precondition failed") {
		t.Errorf("a name taken in the drop box: exit %d: %s", code, stderr)
	}

	for _, args := range [][]string{{txt, s.URL + "folder", "--plain"}, {txt, s.URL + "folder", "--protocol", "ietf"}} {
		if code, stderr := put(args...); code != 1 || !strings.Contains(stderr, "end the URL with a slash ("+s.URL+"folder/)") {
			t.Errorf("put %v to a folder's name: exit %d: %s", args, code, stderr)
		}
	}

	// A client that goes away mid-body.
	req, _ := http.NewRequest(http.MethodPut, s.URL+"cut.bin", io.MultiReader(strings.NewReader(strings.Repeat("x", 1<<20)), failing{}))
	req.ContentLength = 10 << 20
	req.Header.Set("Authorization", "Bearer "+testToken)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a body cut short answered %s", resp.Status)
	}
	line := ""
	if !poll.Until(10*time.Second, 10*time.Millisecond, func() bool {
		for l := range strings.SplitSeq(s.stderr.String(), "\n") {
			if strings.Contains(l, "path=/cut.bin") {
				line = l
				return true
			}
		}
		return false
	}) {
		t.Fatal("no access line of the cut upload")
	}
	if !strings.Contains(line, "status=499") || !strings.Contains(line, "outcome=aborted") {
		t.Errorf("the cut upload's line: %s", line)
	}

	// A disk too full for the upload (the reserve): WARN, not ERROR.
	full := startServer(t, t.TempDir(), "--upload", "--token", testToken, "--reserve", "1000000TB")
	resp, _ := send(t, "PUT", full.URL+"f.bin", strings.NewReader("f"), 1, "Authorization", "Bearer "+testToken)
	if resp.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("an upload past the reserve: %d", resp.StatusCode)
	}
	// The log is written behind the answer: wait for the request's line.
	poll.Until(10*time.Second, 10*time.Millisecond, func() bool {
		return strings.Contains(full.stderr.String(), "path=/f.bin status=507")
	})
	if logs := full.stderr.String(); strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "level=WARN") {
		t.Errorf("a full disk's log:\n%s", logs)
	}
}

// failing is a body that fails: a client going away.
type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("gone") }

// TestUploadOnUnwritableFolder: a server told to take writes in a folder
// it cannot write in says which folder, what failed and why, in one line.
func TestUploadOnUnwritableFolder(t *testing.T) {
	// A folder of its own that others may enter, so that nobody (below)
	// reaches the binary and the served folder.
	base, err := os.MkdirTemp("", "largo-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	dir := filepath.Join(base, "ro")
	os.MkdirAll(dir, 0o755)
	bin := largoBin
	var cred *syscall.Credential
	if os.Getuid() == 0 {
		// Root writes everywhere: run as nobody, whom the folder (root's,
		// 0755) refuses.
		bin = filepath.Join(base, "largo")
		b, err := os.ReadFile(largoBin)
		if err != nil || os.WriteFile(bin, b, 0o755) != nil {
			t.Fatal("copying the binary")
		}
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	} else {
		os.Chmod(dir, 0o555)
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	cmd := exec.Command(bin, "serve", dir, "--upload", "--listen", "127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	last := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(last, dir) || !strings.Contains(last, "permission denied") {
		t.Errorf("%v: %s", err, out)
	}
}
