package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"largo/internal/testenv"
)

// update makes TestDocsUpToDate write the reference, man pages and
// completions into the repository instead of comparing them (go generate
// ./cmd/largo).
var update = flag.Bool("update", false, "write the reference, man pages and completions into the repository")

// Where the generated files go, below the repository's root.
const (
	referenceDir   = "docs/reference"
	manDir         = "man/man1"
	completionsDir = "dist/completions"
)

// manDate is the date the man pages carry: fixed, so that generating them
// again changes nothing unless a command did.
var manDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// generatedNote heads every generated markdown page.
const generatedNote = "<!-- Generated from largo's commands by `go generate ./cmd/largo`: edit the commands, not this file. -->\n\n"

// writeDocs writes the reference, man pages and completions of largo's
// commands below out, replacing what those folders held. Hidden commands
// are left out.
func writeDocs(e *env, out string) error {
	root := newRoot(e)
	// What cobra adds when a command line runs: the help and completion
	// commands, the help and version flags.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	root.DisableAutoGenTag = true
	dirs := map[string]string{}
	for _, d := range []string{referenceDir, manDir, completionsDir} {
		p := filepath.Join(out, d)
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
		dirs[d] = p
	}
	prepend := func(string) string { return generatedNote }
	link := func(name string) string { return name }
	if err := doc.GenMarkdownTreeCustom(root, dirs[referenceDir], prepend, link); err != nil {
		return err
	}
	header := &doc.GenManHeader{Section: "1", Date: &manDate, Source: "largo", Manual: "largo manual"}
	if err := doc.GenManTree(root, header, dirs[manDir]); err != nil {
		return err
	}
	c := dirs[completionsDir]
	for name, gen := range map[string]func(string) error{
		"largo.bash": func(p string) error { return root.GenBashCompletionFileV2(p, true) },
		"_largo":     root.GenZshCompletionFile,
		"largo.fish": func(p string) error { return root.GenFishCompletionFile(p, true) },
	} {
		if err := gen(filepath.Join(c, name)); err != nil {
			return err
		}
	}
	return nil
}

// TestDocsUpToDate generates the reference, man pages and completions
// into a temporary folder and compares them with the repository's: a
// command or flag changed without `go generate ./cmd/largo` fails here.
func TestDocsUpToDate(t *testing.T) {
	repo := filepath.Join("..", "..")
	env := quietEnv(io.Discard, io.Discard)
	if *update {
		if err := writeDocs(env, repo); err != nil {
			t.Fatal(err)
		}
		return
	}
	tmp := t.TempDir()
	if err := writeDocs(env, tmp); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{referenceDir, manDir, completionsDir} {
		fresh, committed := readTree(t, filepath.Join(tmp, dir)), readTree(t, filepath.Join(repo, dir))
		if len(fresh) == 0 {
			t.Fatalf("nothing was written into %s", dir)
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
	if err := writeDocs(env, tmp); err != nil {
		t.Fatal(err)
	}
	ref := readTree(t, filepath.Join(tmp, referenceDir))
	man := readTree(t, filepath.Join(tmp, manDir))
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, c := range c.Commands() {
			path := c.CommandPath()
			md, page := strings.ReplaceAll(path, " ", "_")+".md", strings.ReplaceAll(path, " ", "-")+".1"
			_, inRef := ref[md]
			_, inMan := man[page]
			if c.Hidden && (inRef || inMan || strings.Contains(string(ref[strings.ReplaceAll(c.Parent().CommandPath(), " ", "_")+".md"]), path+"]")) {
				t.Errorf("hidden command %s is documented", path)
			}
			if !c.Hidden && (!inRef || !inMan) {
				t.Errorf("command %s lacks its reference page or man page", path)
			}
			walk(c)
		}
	}
	walk(newRoot(env))
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
	buf.Reset()
	if err := run(context.Background(), []string{"__complete", "bench", ""}, env); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); strings.Contains(got, "naive-server") {
		t.Errorf("completions offer the hidden naive-server:\n%s", got)
	}
}

// TestBinaryLeavesOutDocsGenerator checks that the generator of the
// reference and man pages, which only this file uses, is not linked into
// largo: its renderers' package initialisers would run in every server.
func TestBinaryLeavesOutDocsGenerator(t *testing.T) {
	gobin := testenv.Program(t, "go")
	out, err := exec.Command(gobin, "list", "-deps", "largo/cmd/largo").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/spf13/cobra/doc" || strings.Contains(p, "blackfriday") || strings.Contains(p, "yaml") {
			t.Errorf("largo links %s", p)
		}
	}
}
