package largo_test

import (
	"context"
	"errors"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"largo"
	"largo/disk"
	"largo/gate"
	"largo/listing"
)

// walkTree makes the tree the walk tests walk: files, a folder nested
// twice, a link to a folder (a cycle, were it entered), a link to a
// file, a hidden file, the state area and the reserved prefix.
func walkTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"a/x", "a/b/y", "a/b/c/z", "a/.hidden", "other/w", ".largo/s", "_largo/r"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..", filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b/y", filepath.Join(dir, "a", "flink")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// faulty is a store that lists what its store lists, then, for the
// folders in fail, that error, and for the folders in extra, those
// names besides.
type faulty struct {
	largo.Store
	fail  map[string]error
	extra map[string][]string
}

func (f faulty) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return func(yield func(largo.Info, error) bool) {
		for _, e := range f.extra[name] {
			if !yield(largo.Info{Name: e}, nil) {
				return
			}
		}
		for in, err := range f.Store.List(ctx, name) {
			if !yield(in, err) {
				return
			}
		}
		if err := f.fail[name]; err != nil {
			yield(largo.Info{}, err)
		}
	}
}

// served is a store behind the gate, asked as the server.
type served struct{ *gate.Store }

func (s served) Stat(ctx context.Context, name string) (largo.Info, error) {
	return s.Store.Stat(gate.With(ctx, gate.Server()), name)
}

func (s served) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return s.Store.List(gate.With(ctx, gate.Server()), name)
}

// visit spells one call of a WalkDirFunc: the name, "/" for a folder,
// "@" for a link, "!" with an error.
func visit(name string, in largo.Info, err error) string {
	s := name
	if in.IsDir {
		s += "/"
	}
	if in.Link {
		s += "@"
	}
	if err != nil {
		s += "!"
	}
	return s
}

// TestWalkDir: the semantics of fs.WalkDir on a store (SkipDir, SkipAll,
// errors told to fn, what returning them does), and the rules of every
// walk: links passed to fn and never entered, hidden and reserved names
// passed over, a folder gone meanwhile walked as empty, a done context.
func TestWalkDir(t *testing.T) {
	errBoom := errors.New("boom")
	var dir string
	var cancel context.CancelFunc
	all := []string{"/", "a/", "a/x", "a/b/", "a/b/y", "a/b/c/", "a/b/c/z", "a/link@", "a/flink@", "other/", "other/w"}
	gatedAll := []string{"/", "a/", "a/x", "a/b/", "a/b/y", "a/b/c/", "a/b/c/z", "a/link/@", "a/flink@", "other/", "other/w"}
	without := func(names []string, gone ...string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(gone, n) })
	}
	cases := []struct {
		name   string
		root   string
		gated  bool // through the gate, as the server
		sorted bool // each folder by name (listing's Sorted): a known order
		fail   map[string]error
		extra  map[string][]string
		ret    map[string]error // what fn returns, by visit; an error call returns its error unless named
		do     map[string]func()
		want   []string // the visits, in order when sorted, else in any
		err    error
	}{
		{name: "everything", want: all},
		{name: "a subfolder", root: "a/b", want: []string{"a/b/", "a/b/y", "a/b/c/", "a/b/c/z"}},
		{name: "a file", root: "a/x", want: []string{"a/x"}},
		{name: "the gate: links as what they lead to", gated: true, want: gatedAll},
		{name: "in order", sorted: true, want: []string{"/", "a/", "a/b/", "a/b/c/", "a/b/c/z", "a/b/y", "a/flink@", "a/link@", "a/x", "other/", "other/w"}},
		{name: "SkipDir on a folder", ret: map[string]error{"a/b/": largo.SkipDir}, want: without(all, "a/b/y", "a/b/c/", "a/b/c/z")},
		{name: "fs.SkipDir on a folder", ret: map[string]error{"a/b/c/": fs.SkipDir}, want: without(all, "a/b/c/z")},
		{name: "SkipDir on the root", ret: map[string]error{"/": largo.SkipDir}, want: []string{"/"}},
		{name: "SkipDir on a file skips the rest of its folder", sorted: true, ret: map[string]error{"a/flink@": largo.SkipDir},
			want: []string{"/", "a/", "a/b/", "a/b/c/", "a/b/c/z", "a/b/y", "a/flink@", "other/", "other/w"}},
		{name: "SkipDir on a linked folder", gated: true, sorted: true, ret: map[string]error{"a/link/@": largo.SkipDir},
			want: []string{"/", "a/", "a/b/", "a/b/c/", "a/b/c/z", "a/b/y", "a/flink@", "a/link/@", "a/x", "other/", "other/w"}},
		{name: "SkipAll", sorted: true, ret: map[string]error{"a/b/c/": largo.SkipAll}, want: []string{"/", "a/", "a/b/", "a/b/c/"}},
		{name: "an error ends the walk", sorted: true, ret: map[string]error{"a/b/y": errBoom}, want: []string{"/", "a/", "a/b/", "a/b/c/", "a/b/c/z", "a/b/y"}, err: errBoom},
		{name: "a missing root, its error returned", root: "missing", want: []string{"missing!"}, err: largo.ErrNotFound},
		{name: "a missing root, its error passed over", root: "missing", ret: map[string]error{"missing!": nil}, want: []string{"missing!"}},
		{name: "a listing that fails, its error returned", sorted: true, fail: map[string]error{"a/b": errBoom},
			want: []string{"/", "a/", "a/b/", "a/b/c/", "a/b/c/z", "a/b/y", "a/b/!"}, err: errBoom},
		{name: "a listing that fails, passed over", fail: map[string]error{"a/b": errBoom}, ret: map[string]error{"a/b/!": nil},
			want: append(slices.Clone(all), "a/b/!")},
		{name: "a listing that fails, SkipDir", fail: map[string]error{"a/b": errBoom}, ret: map[string]error{"a/b/!": largo.SkipDir},
			want: append(slices.Clone(all), "a/b/!")},
		{name: "hidden and reserved names listed", extra: map[string][]string{"": {".largo", "_largo", ".x"}, "a": {".git", "_largo"}},
			want: append(slices.Clone(all), "a/_largo")},
		{name: "a folder removed meanwhile", do: map[string]func(){"a/b/": func() { os.RemoveAll(filepath.Join(dir, "a", "b")) }},
			want: without(all, "a/b/y", "a/b/c/", "a/b/c/z")},
		{name: "the context done", sorted: true, do: map[string]func(){"a/b/c/z": func() { cancel() }},
			want: []string{"/", "a/", "a/b/", "a/b/c/", "a/b/c/z"}, err: context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir = walkTree(t)
			d, err := disk.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			var st largo.Store = d
			if c.gated {
				_, g := gate.Open(d)
				st = served{g}
			}
			if c.sorted {
				st = listing.Config{}.Sorted(st, listing.ByName, nil)
			}
			if c.fail != nil || c.extra != nil {
				st = faulty{Store: st, fail: c.fail, extra: c.extra}
			}
			var ctx context.Context
			ctx, cancel = context.WithCancel(context.Background())
			defer cancel()
			var got []string
			err = largo.WalkDir(ctx, st, c.root, func(name string, in largo.Info, err error) error {
				v := visit(name, in, err)
				got = append(got, v)
				if f := c.do[v]; f != nil {
					f()
				}
				if r, ok := c.ret[v]; ok {
					return r
				}
				return err
			})
			if !errors.Is(err, c.err) || (c.err == nil) != (err == nil) {
				t.Errorf("WalkDir: %v; want %v", err, c.err)
			}
			want := c.want
			if !c.sorted {
				checkPreorder(t, got)
				got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
			}
			if !slices.Equal(got, want) {
				t.Errorf("visits %q\nwant %q", got, want)
			}
		})
	}
}

// checkPreorder checks that every name came after its folder.
func checkPreorder(t *testing.T, visits []string) {
	t.Helper()
	seen := map[string]bool{}
	for i, v := range visits {
		name := strings.TrimRight(v, "/@!")
		if j := strings.LastIndexByte(name, '/'); i > 0 && j > 0 && !seen[name[:j]] && !strings.HasSuffix(v, "!") {
			t.Errorf("%s walked before its folder (%q)", v, visits)
		}
		seen[name] = true
	}
}

// TestWalkDirLinks: a link is told as its store knows it: with nothing
// but its name on a store that follows no link, with what it leads to
// through the gate.
func TestWalkDirLinks(t *testing.T) {
	dir := walkTree(t)
	d, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	_, g := gate.Open(d)
	for _, st := range []largo.Store{d, served{g}} {
		links := map[string]largo.Info{}
		err := largo.WalkDir(context.Background(), st, "a", func(name string, in largo.Info, err error) error {
			if in.Link {
				links[name] = in
			}
			return err
		})
		if err != nil || len(links) != 2 {
			t.Fatalf("%T: links %v, %v", st, links, err)
		}
		file, folder := links["a/flink"], links["a/link"]
		_, gated := st.(served)
		switch {
		case !gated && (file != largo.Info{Name: "flink", Link: true} || folder != largo.Info{Name: "link", Link: true}):
			t.Errorf("on the disk: %+v, %+v; want the names and Link alone", file, folder)
		case gated && (file.IsDir || file.Size != int64(len("a/b/y")) || file.ETag == "" || !folder.IsDir):
			t.Errorf("through the gate: %+v, %+v; want what they lead to", file, folder)
		}
	}
}
