package main

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"largo/internal/testenv"
)

// TestSystemdUnits has systemd-analyze verify the service and socket
// units of dist/: any warning (an unknown or misspelt setting, a bad
// value, a man page of Documentation= that does not exist) fails. The
// binary the service starts is not installed here, so ExecStart names
// this test's own executable instead.
func TestSystemdUnits(t *testing.T) {
	analyze := testenv.Program(t, "systemd-analyze")
	repo := filepath.Join("..", "..")
	tmp := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"largo.service", "largo.socket"} {
		b, err := os.ReadFile(filepath.Join(repo, "dist", name))
		if err != nil {
			t.Fatal(err)
		}
		unit := strings.ReplaceAll(string(b), "/usr/local/bin/largo", self)
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(unit), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	man, err := filepath.Abs(filepath.Join(repo, "man"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(analyze, "verify", filepath.Join(tmp, "largo.socket"), filepath.Join(tmp, "largo.service"))
	cmd.Env = append(os.Environ(), "MANPATH="+man)
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestDockerfile checks what no container engine checks here: the image
// runs as a user other than root, its entry point and health check name
// largo commands that exist, and the health check asks the port the image
// listens on and exposes, on the loopback address.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	final := map[string]string{} // the last stage's instructions
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		if word == "FROM" {
			final = map[string]string{}
		}
		final[word] = rest
	}
	if u := final["USER"]; u == "" || strings.HasPrefix(u, "0") || strings.HasPrefix(u, "root") {
		t.Errorf("the image runs as %q, want a user without privileges", u)
	}
	execForm := func(s string) []string {
		var args []string
		if err := json.Unmarshal([]byte(s), &args); err != nil {
			t.Fatalf("%q is not an exec-form command: %v", s, err)
		}
		return args
	}
	root := newRoot(quietEnv(io.Discard, io.Discard))
	entry := execForm(final["ENTRYPOINT"])
	_, hc, _ := strings.Cut(final["HEALTHCHECK"], " CMD ")
	for _, args := range [][]string{append(entry[1:], execForm(final["CMD"])...), execForm(hc)[1:]} {
		if c, _, err := root.Find(args); err != nil || c == root {
			t.Errorf("largo %v is no command: %v", args, err)
		}
	}
	listen := ""
	for f := range strings.FieldsSeq(final["ENV"]) {
		if v, ok := strings.CutPrefix(f, "LARGO_LISTEN="); ok {
			listen = v
		}
	}
	_, port, _ := net.SplitHostPort(listen)
	if u, err := healthURL(listen); err != nil || u != "http://127.0.0.1:"+port+"/_largo/healthz" {
		t.Errorf("the health check of LARGO_LISTEN=%s asks %q (%v)", listen, u, err)
	}
	if final["EXPOSE"] != port || final["VOLUME"] == "" {
		t.Errorf("EXPOSE %q and VOLUME %q, want port %s and the served folder", final["EXPOSE"], final["VOLUME"], port)
	}
}

func TestHealthURL(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/_largo/healthz",
		"0.0.0.0:80":     "http://127.0.0.1:80/_largo/healthz",
		":9000":          "http://127.0.0.1:9000/_largo/healthz",
		"[::]:8080":      "http://[::1]:8080/_largo/healthz",
		"files.lan:8080": "http://files.lan:8080/_largo/healthz",
	} {
		if got, err := healthURL(listen); err != nil || got != want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", listen, got, err, want)
		}
	}
	if _, err := healthURL("8080"); err == nil {
		t.Error(`healthURL("8080") accepted an address without a host part`)
	}
}
