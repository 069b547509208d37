package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"largo/internal/testenv"
)

// TestReadmeQuickStart runs the README's quick start as a newcomer would,
// line by line in one shell, with largo (this test binary, run as largo)
// and curl: a folder served, a download with curl and largo get (verified:
// the file was there before the server, which hashed it at start), an
// upload with curl and largo put. Only the port changes, to a free one, and the
// shell waits for the server's health check before the first download,
// where a person would glance at its first line.
func TestReadmeQuickStart(t *testing.T) {
	testenv.Program(t, "curl")
	bash := testenv.Program(t, "bash")
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "## Quick start\n")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no sh block under ## Quick start")
	}

	home, bin := t.TempDir(), t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "largo")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()

	script := "set -e\n"
	served := false
	for line := range strings.Lines(block) {
		line = strings.ReplaceAll(line, "127.0.0.1:8080", addr)
		if strings.HasPrefix(line, "largo serve ") {
			line = strings.Replace(line, "largo serve ", "largo serve --listen "+addr+" ", 1)
			line = strings.Replace(line, " &", " > serve.log 2>&1 &", 1)
			script += line + "srv=$!\ntrap 'kill $srv; wait $srv' EXIT\n" +
				"for i in $(seq 300); do largo healthcheck --listen " + addr + " 2>/dev/null && break; sleep 0.1; done\n"
			served = true
			continue
		}
		script += line
	}
	if !served {
		t.Fatal("the quick start serves nothing")
	}
	cmd := exec.Command(bash, "-c", script)
	cmd.Env = append(os.Environ(), "HOME="+home, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), runAsLargo+"=1", "XDG_CACHE_HOME=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the quick start failed: %v\n%s", err, out)
	}
	dir := filepath.Join(home, "largo-try")
	for _, name := range []string{"hello.txt", "copy.txt", "up/one.txt", "up/copy.txt"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != "hello\n" {
			t.Errorf("%s after the quick start: %q, %v\n%s", name, got, err, out)
		}
	}
	// hello.txt was written before the server started: its background
	// hashing gave it its digest, and the download checked it.
	if !strings.Contains(string(out), "saved copy.txt") || !strings.Contains(string(out), "verified against the server's sha-256") {
		t.Errorf("largo get of a file copied onto the disk is not verified:\n%s", out)
	}
	for _, want := range []string{`"one.txt"`, `"copy.txt"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the JSON listing lacks %s:\n%s", want, out)
		}
	}
}
