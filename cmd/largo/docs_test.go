package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"largo/internal/testenv"
)

// TestDocsUpToDate generates the reference, man pages and completions
// into a temporary folder and compares them with the repository's: a
// command or flag changed without `go generate ./cmd/largo` fails here.
func TestDocsUpToDate(t *testing.T) {
	tmp := t.TempDir()
	var out bytes.Buffer
	env := quietEnv(&out, &out)
	if err := run(context.Background(), []string{"docs", "--out", tmp}, env); err != nil {
		t.Fatalf("largo docs: %v\n%s", err, out.String())
	}
	repo := filepath.Join("..", "..")
	for _, dir := range []string{referenceDir, manDir, completionsDir} {
		fresh, committed := readTree(t, filepath.Join(tmp, dir)), readTree(t, filepath.Join(repo, dir))
		if len(fresh) == 0 {
			t.Fatalf("largo docs wrote nothing into %s", dir)
		}
		for name, b := range fresh {
			old, ok := committed[name]
			switch {
			case !ok:
				t.Errorf("%s/%s is missing: run go generate ./cmd/largo", dir, name)
			case !bytes.Equal(old, b):
				t.Errorf("%s/%s is stale: run go generate ./cmd/largo", dir, name)
			}
		}
		for name := range committed {
			if _, ok := fresh[name]; !ok {
				t.Errorf("%s/%s is no longer generated: run go generate ./cmd/largo", dir, name)
			}
		}
	}
}

// TestDocsLeaveHidden checks that hidden commands stay out of the
// reference and the man pages, and that the commands a user runs are in.
func TestDocsLeaveHidden(t *testing.T) {
	tmp := t.TempDir()
	env := quietEnv(io.Discard, io.Discard)
	if err := run(context.Background(), []string{"docs", "--out", tmp}, env); err != nil {
		t.Fatal(err)
	}
	ref := readTree(t, filepath.Join(tmp, referenceDir))
	man := readTree(t, filepath.Join(tmp, manDir))
	for _, c := range newRoot(env).Commands() {
		md, page := "largo_"+c.Name()+".md", "largo-"+c.Name()+".1"
		_, inRef := ref[md]
		_, inMan := man[page]
		if c.Hidden && (inRef || inMan || strings.Contains(string(ref["largo.md"]), "largo "+c.Name()+"]")) {
			t.Errorf("hidden command %s is documented", c.Name())
		}
		if !c.Hidden && (!inRef || !inMan) {
			t.Errorf("command %s lacks its reference page or man page", c.Name())
		}
	}
	if !bytes.Contains(ref["largo_serve.md"], []byte("--listen string")) || !bytes.Contains(ref["largo_serve.md"], []byte("$LARGO_LISTEN")) {
		t.Error("the serve reference does not document --listen and its variable")
	}
}

// readTree reads every file below dir by its path relative to dir.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return files
}

// TestBashCompletion loads the committed bash completion into bash, which
// registers it for largo, and asks largo for the completions it serves:
// the visible commands, not the hidden ones.
func TestBashCompletion(t *testing.T) {
	bash := testenv.Program(t, "bash")
	file := filepath.Join("..", "..", completionsDir, "largo.bash")
	out, err := exec.Command(bash, "-c", `source "$1" && complete -p largo`, "bash", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "__start_largo largo") {
		t.Fatalf("bash did not register the completion: %v\n%s", err, out)
	}
	var buf bytes.Buffer
	env := quietEnv(&buf, io.Discard)
	if err := run(context.Background(), []string{"__complete", ""}, env); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{"serve\t", "get\t", "put\t", "version\t", "healthcheck\t", "access\t"} {
		if !strings.Contains(got, want) {
			t.Errorf("completions lack %q:\n%s", want, got)
		}
	}
	for _, hidden := range []string{"docs"} {
		if strings.Contains(got, hidden) {
			t.Errorf("completions offer the hidden %s:\n%s", hidden, got)
		}
	}
}
