package main

//go:generate go run . docs --out ../..

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// Where `largo docs` writes, below its --out folder.
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

func newDocs(e *env) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "docs",
		Short: "Write the command reference, man pages and shell completions",
		Long: `Write, below --out, the markdown reference of every command and flag
(docs/reference/), their man pages (man/man1/) and the bash, zsh and fish
completions (dist/completions/), all from the commands themselves. Hidden
commands, this one included, are left out. go generate ./cmd/largo runs it
on the repository.`,
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := writeDocs(cmd.Root(), out); err != nil {
				return failed(err)
			}
			fmt.Fprintf(e.stdout, "largo: wrote %s, %s and %s below %s\n", referenceDir, manDir, completionsDir, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", ".", "folder to write below (the repository's root)")
	documentEnv(cmd.Flags())
	return cmd
}

// writeDocs writes the reference, man pages and completions of root below
// out, replacing what those folders held.
func writeDocs(root *cobra.Command, out string) error {
	root.DisableAutoGenTag = true
	root.InitDefaultVersionFlag()
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
