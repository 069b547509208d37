package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsage: largo usage prints nothing counted until a pass, then the
// paths and users beside their limits; a missing access file is an
// error.
func TestUsage(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"p/a": "12345", "p/q/b": "123", "c": "1"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	access := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(access, []byte(`
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
quota = "1KiB"

[[quota]]
path = "/p"
bytes = "2KiB"
files = 10
`), 0o600)
	out, stderr, err := runCLI(t, "usage", dir, "--access", access)
	if err != nil || !strings.Contains(out, "never counted from the files") {
		t.Fatalf("before a pass: %v\n%s%s", err, out, stderr)
	}
	out, stderr, err = runCLI(t, "usage", dir, "--access", access, "--reconcile")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"/p          8 B    2 KiB  2      10", "user alice  0 B    1 KiB  0      -", "counted from the files at "} {
		if !strings.Contains(out, want) {
			t.Errorf("largo usage --reconcile printed\n%s\nwithout %q", out, want)
		}
	}
	if _, _, err := runCLI(t, "usage", dir, "--access", filepath.Join(dir, "none.toml")); err == nil {
		t.Error("a missing access file: no error")
	}
}
