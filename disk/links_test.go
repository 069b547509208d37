package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"largo"
)

// linkTree makes a folder of files and symbolic links (link name ->
// target, as the link holds it) and a Store on it.
func linkTree(t *testing.T, files, links map[string]string) (*Store, string) {
	t.Helper()
	dir := makeTree(t, files)
	for name, target := range links {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// The links of the findings: pub/d leads into private, and x, dd and key
// step back from where d led, not from pub.
var chainLinks = map[string]string{
	"pub/d":       "../private/inner",
	"pub/x":       "d/../secret.txt",
	"pub/dd":      "d/..",
	"pub/key":     "d/../kk",
	"private/kk":  "../.largo/share.key",
	"pub/self":    ".",
	"pub/up":      "..",
	"pub/out":     "../..",
	"pub/abs":     "/etc/passwd",
	"pub/loop":    "loop",
	"pub/dang":    "nowhere/file",
	"pub/dangup":  "nowhere/../private/secret.txt",
	"pub/r1":      "r2",
	"pub/r2":      "r3/f",
	"pub/r3":      "../private/inner",
	"pub/tofile":  "../private/secret.txt",
	"pub/through": "tofile/x",
}

var chainFiles = map[string]string{
	"pub/own.txt":        "pub",
	"private/secret.txt": "secret",
	"private/inner/a":    "inner",
	".largo/share.key":   "key",
}

// TestResolve checks that a name resolves where the kernel would take
// it: a link's ".." steps back from where the link led.
func TestResolve(t *testing.T) {
	s, _ := linkTree(t, chainFiles, chainLinks)
	ctx := context.Background()
	for _, c := range []struct{ name, want string }{
		{"pub/own.txt", "pub/own.txt"},
		{"pub/d", "private/inner"},
		{"pub/d/a", "private/inner/a"},
		{"pub/x", "private/secret.txt"},
		{"pub/dd", "private"},
		{"pub/dd/secret.txt", "private/secret.txt"},
		{"pub/key", ".largo/share.key"},
		{"pub/self/own.txt", "pub/own.txt"},
		{"pub/up", ""},
		{"pub/up/private/secret.txt", "private/secret.txt"},
		{"pub/r1", "private/inner/f"},
		{"pub/new/file", "pub/new/file"},
		{"pub/d/new", "private/inner/new"},
		{"pub/dang", "pub/nowhere/file"},
		{"pub/through", "private/secret.txt/x"},
	} {
		got, hops, err := s.Resolve(ctx, c.name)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", c.name, got, err, c.want)
		}
		if (got != c.name) != (len(hops) > 0) {
			t.Errorf("Resolve(%q): %d hops", c.name, len(hops))
		}
	}
	for _, name := range []string{"pub/out", "pub/abs", "pub/loop", "pub/dangup", "pub/out/x"} {
		if got, _, err := s.Resolve(ctx, name); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("Resolve(%q) = %q, %v; want ErrNotFound", name, got, err)
		}
	}
	// Each hop names where its own link led, its target's links followed.
	_, hops, _ := s.Resolve(ctx, "pub/x")
	want := []largo.Hop{{Link: "pub/d", Target: "private/inner"}, {Link: "pub/x", Target: "private/secret.txt"}}
	if !slices.Equal(hops, want) {
		t.Errorf("hops of pub/x = %v; want %v", hops, want)
	}
}

// TestNoFollow checks that the store itself follows no link: every call
// on a name with a link on the way fails with ErrSymlink.
func TestNoFollow(t *testing.T) {
	s, dir := linkTree(t, chainFiles, chainLinks)
	ctx := context.Background()
	for _, name := range []string{"pub/x", "pub/d/a", "pub/dd/secret.txt", "pub/key", "pub/up/private/secret.txt"} {
		if f, err := s.Open(ctx, name); !errors.Is(err, largo.ErrSymlink) || !errors.Is(err, largo.ErrNotFound) {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(%q) = %v; want ErrSymlink", name, err)
		}
		if _, err := s.Stat(ctx, name); !errors.Is(err, largo.ErrSymlink) {
			t.Errorf("Stat(%q) = %v; want ErrSymlink", name, err)
		}
	}
	for _, dir := range []string{"pub/dd", "pub/d", "pub/up"} {
		for _, err := range s.List(ctx, dir) {
			if !errors.Is(err, largo.ErrSymlink) {
				t.Errorf("List(%q) yields %v; want ErrSymlink", dir, err)
			}
			break
		}
	}
	if _, err := s.Create(ctx, "pub/dd/new.txt", largo.CreateOptions{Size: -1}); !errors.Is(err, largo.ErrSymlink) {
		t.Errorf("Create through a link = %v; want ErrSymlink", err)
	}
	if err := s.Remove(ctx, "pub/dd/secret.txt", largo.RemoveOptions{}); !errors.Is(err, largo.ErrSymlink) {
		t.Errorf("Remove through a link = %v; want ErrSymlink", err)
	}
	if err := s.MakeDir(ctx, "pub/dd/m"); !errors.Is(err, largo.ErrSymlink) {
		t.Errorf("MakeDir through a link = %v; want ErrSymlink", err)
	}
	if err := s.Rename(ctx, "pub/own.txt", "pub/dd/moved"); !errors.Is(err, largo.ErrSymlink) {
		t.Errorf("Rename through a link = %v; want ErrSymlink", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "private/secret.txt")); string(b) != "secret" {
		t.Errorf("private/secret.txt = %q", b)
	}
	// A link is an entry of its folder, with nothing followed.
	var links []string
	for in, err := range s.List(ctx, "pub") {
		if err != nil {
			t.Fatal(err)
		}
		if in.Link {
			if in.IsDir || in.Size != 0 || in.ETag != "" {
				t.Errorf("link %s listed with %+v", in.Name, in)
			}
			links = append(links, in.Name)
		}
	}
	if len(links) != len(chainLinks)-1 {
		t.Errorf("List(pub) yields links %q", links)
	}
	// A link is removed, not what it leads to.
	if err := s.Remove(ctx, "pub/x", largo.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "pub/x")); !os.IsNotExist(err) {
		t.Errorf("pub/x still there: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "private/secret.txt")); string(b) != "secret" {
		t.Errorf("removing the link pub/x changed its target: %q", b)
	}
}

// TestCommitWhereHeld checks that a write lands in the folder it was
// created in, or nowhere: a folder swapped for a link, moved away or
// replaced while the bytes arrive fails the commit with ErrChanged,
// leaving nothing placed and nothing staged.
func TestCommitWhereHeld(t *testing.T) {
	ctx := context.Background()
	swaps := map[string]func(dir string) error{
		"link": func(dir string) error {
			if err := os.Rename(filepath.Join(dir, "pub/w"), filepath.Join(dir, "pub/w-old")); err != nil {
				return err
			}
			return os.Symlink("../private", filepath.Join(dir, "pub/w"))
		},
		"moved": func(dir string) error {
			return os.Rename(filepath.Join(dir, "pub/w"), filepath.Join(dir, "private/w"))
		},
		"replaced": func(dir string) error {
			if err := os.Rename(filepath.Join(dir, "pub/w"), filepath.Join(dir, "pub/w-old")); err != nil {
				return err
			}
			return os.Mkdir(filepath.Join(dir, "pub/w"), 0o755)
		},
		"parent": func(dir string) error {
			if err := os.Rename(filepath.Join(dir, "pub"), filepath.Join(dir, "pub-old")); err != nil {
				return err
			}
			return os.Symlink("private", filepath.Join(dir, "pub"))
		},
	}
	for what, swap := range swaps {
		for _, target := range []string{"pub/w/f.txt", "pub/w/new/deeper/f.txt"} {
			t.Run(fmt.Sprint(what, "/", strings.Count(target, "/")), func(t *testing.T) {
				s, dir := linkTree(t, map[string]string{"pub/w/keep": "k", "private/keep": "p"}, nil)
				u, err := s.Create(ctx, target, largo.CreateOptions{Size: -1})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := u.Write([]byte("late bytes")); err != nil {
					t.Fatal(err)
				}
				if err := swap(dir); err != nil {
					t.Fatal(err)
				}
				_, _, err = u.Commit(ctx, largo.Condition{})
				if !errors.Is(err, largo.ErrChanged) {
					t.Errorf("Commit after the folder %s = %v; want ErrChanged", what, err)
				}
				filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
					if err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len("late bytes")) {
						t.Errorf("the write was placed at %s", p)
					}
					return nil
				})
				if n := tempCount(t, dir); n != 0 {
					t.Errorf("%d files left in %s", n, TempDir)
				}
			})
		}
	}
	// Untouched, the write lands, missing folders made.
	s, dir := linkTree(t, map[string]string{"pub/w/keep": "k"}, nil)
	u, err := s.Create(ctx, "pub/w/a/b/f.txt", largo.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	u.Write([]byte("bytes"))
	if _, created, err := u.Commit(ctx, largo.Condition{IfNoneMatch: true}); err != nil || !created {
		t.Fatalf("Commit = %v, %v", created, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "pub/w/a/b/f.txt")); string(b) != "bytes" {
		t.Errorf("placed %q", b)
	}
}

// tempCount counts the entries of the temporary folder.
func tempCount(t *testing.T, dir string) int {
	ents, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(TempDir)))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(ents)
}

// BenchmarkResolveChain resolves a name through a chain of 40 links (the
// kernel's own bound): the cost of the worst name a gate judges.
func BenchmarkResolveChain(b *testing.B) {
	links := map[string]string{}
	for i := range 39 {
		links[fmt.Sprintf("c/l%d", i)] = fmt.Sprintf("l%d", i+1)
	}
	links["c/l39"] = "../d/f"
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "c"), 0o755)
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	os.WriteFile(filepath.Join(dir, "d/f"), []byte("x"), 0o644)
	for name, target := range links {
		os.Symlink(target, filepath.Join(dir, name))
	}
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if got, hops, err := s.Resolve(ctx, "c/l0"); got != "d/f" || len(hops) != 40 || err != nil {
		b.Fatalf("Resolve = %q, %d hops, %v", got, len(hops), err)
	}
	b.ResetTimer()
	for range b.N {
		s.Resolve(ctx, "c/l0")
	}
}
