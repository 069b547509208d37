package archive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"largo"
	"largo/disk"
	"largo/gate"
	"largo/listing"
)

var tree = map[string]string{
	"a.txt":                                "alpha",
	"b/c.bin":                              strings.Repeat("\x00\x01\x02", 70000),
	"b/d/e.txt":                            "deep",
	"ünïcode/名前.txt":                       "unicode",
	strings.Repeat("long-name/", 15) + "f": "a name past 100 bytes",
	".hidden":                              "never",
	"b/.git/config":                        "never",
}

// served is a folder as the server reads it: behind the gate, which
// resolves the folder's symbolic links (the store itself follows none),
// for the server's own principal.
type served struct{ *gate.Store }

func (s served) Stat(ctx context.Context, name string) (largo.Info, error) {
	return s.Store.Stat(gate.With(ctx, gate.Server()), name)
}

func (s served) Open(ctx context.Context, name string) (largo.File, error) {
	return s.Store.Open(gate.With(ctx, gate.Server()), name)
}

func (s served) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return s.Store.List(gate.With(ctx, gate.Server()), name)
}

func newStore(t *testing.T) (served, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range tree {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	os.Mkdir(filepath.Join(dir, "empty"), 0o755)
	os.Symlink("..", filepath.Join(dir, "b", "up"))           // a cycle
	os.Symlink("../a.txt", filepath.Join(dir, "b", "a-link")) // a linked file
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	_, gs := gate.Open(s)
	return served{gs}, dir
}

// want is what the archive of the whole tree must hold, under "top/".
func want() map[string]string {
	m := map[string]string{"top/": "", "top/b/": "", "top/b/d/": "", "top/empty/": "", "top/ünïcode/": "", "top/b/a-link": "alpha"}
	for name, content := range tree {
		if largo.Hidden(name) {
			continue
		}
		m["top/"+name] = content
		for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
			m["top/"+d+"/"] = ""
		}
	}
	return m
}

func TestFormats(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	for _, f := range Formats {
		t.Run(string(f), func(t *testing.T) {
			entries := Walk(ctx, s, "", "top", listing.Config{}, nil)
			p, err := Measure(ctx, f, entries, Options{})
			if err != nil {
				t.Fatal(err)
			}
			size := p.Size
			var buf bytes.Buffer
			if err := Write(ctx, &buf, p, entries, s, Options{}); err != nil {
				t.Fatal(err)
			}
			if f != TarZst && int64(buf.Len()) != size {
				t.Fatalf("Size %d, wrote %d", size, buf.Len())
			}
			if f == TarZst && size != -1 {
				t.Fatalf("Size of tar.zst %d; want -1", size)
			}
			got, order := read(t, f, buf.Bytes())
			w := want()
			if len(got) != len(w) {
				t.Errorf("%d entries %q; want %d", len(got), order, len(w))
			}
			for name, content := range w {
				if g, ok := got[name]; !ok || g != content {
					t.Errorf("%s: %q (present %v)", name, tail(g), ok)
				}
			}
			for i := 1; i < len(order); i++ {
				if order[0] != "top/" {
					t.Fatalf("first entry %q", order[0])
				}
			}
			// Deterministic: a second archive is the same bytes.
			var again bytes.Buffer
			Write(ctx, &again, p, entries, s, Options{})
			if !bytes.Equal(buf.Bytes(), again.Bytes()) {
				t.Error("two archives of the same tree differ")
			}
		})
	}
}

func tail(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}

// read unpacks an archive into name -> content, and the order of names.
func read(t *testing.T, f Format, b []byte) (map[string]string, []string) {
	t.Helper()
	got := map[string]string{}
	var order []string
	switch f {
	case Zip:
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		for _, zf := range zr.File {
			rc, err := zf.Open()
			if err != nil {
				t.Fatal(err)
			}
			c, err := io.ReadAll(rc) // checks the CRC
			if err != nil {
				t.Fatalf("%s: %v", zf.Name, err)
			}
			got[zf.Name] = string(c)
			order = append(order, zf.Name)
		}
	case Tar, TarZst:
		var r io.Reader = bytes.NewReader(b)
		if f == TarZst {
			zr, err := zstd.NewReader(r)
			if err != nil {
				t.Fatal(err)
			}
			defer zr.Close()
			r = zr
		}
		tr := tar.NewReader(r)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			c, _ := io.ReadAll(tr)
			got[h.Name] = string(c)
			order = append(order, h.Name)
		}
	}
	return got, order
}

// TestChangedTree changes the tree between Measure and Write: the archive
// would no longer be the one measured, and Write must say so.
func TestChangedTree(t *testing.T) {
	ctx := context.Background()
	for _, f := range []Format{Zip, Tar} {
		s, dir := newStore(t)
		entries := Walk(ctx, s, "b", "b", listing.Config{}, nil)
		p, err := Measure(ctx, f, entries, Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := filepath.Join(dir, "b", "c.bin")
		os.WriteFile(c, []byte("shorter now"), 0o644)
		if err := Write(ctx, io.Discard, p, entries, s, Options{}); !errors.Is(err, ErrChanged) {
			t.Errorf("%s: changed file: %v; want ErrChanged", f, err)
		}
		os.Remove(c)
		if err := Write(ctx, io.Discard, p, entries, s, Options{}); !errors.Is(err, ErrChanged) {
			t.Errorf("%s: vanished file: %v; want ErrChanged", f, err)
		}
		os.WriteFile(c, []byte(strings.Repeat("x", 300000)), 0o644)
		if err := Write(ctx, io.Discard, p, entries, s, Options{}); !errors.Is(err, ErrChanged) {
			t.Errorf("%s: grown file: %v; want ErrChanged", f, err)
		}
	}
}

// swapStore replaces a file's content when it is opened, after the walk
// listed it: the copy must notice.
type swapStore struct {
	served
	dir string
}

func (s swapStore) Open(ctx context.Context, name string) (largo.File, error) {
	os.WriteFile(filepath.Join(s.dir, filepath.FromSlash(name)), []byte("swapped"), 0o644)
	return s.served.Open(ctx, name)
}

func TestFileChangedBeforeCopy(t *testing.T) {
	s, dir := newStore(t)
	ctx := context.Background()
	for _, f := range Formats {
		entries := Walk(ctx, s, "b", "b", listing.Config{}, nil)
		p, err := Measure(ctx, f, entries, Options{})
		if err != nil {
			t.Fatal(err)
		}
		err = Write(ctx, io.Discard, p, entries, swapStore{s, dir}, Options{})
		if !errors.Is(err, ErrChanged) {
			t.Errorf("%s: %v; want ErrChanged", f, err)
		}
	}
}

func TestFilter(t *testing.T) {
	s, _ := newStore(t)
	noTxt := func(string) func(largo.Info) bool {
		return func(e largo.Info) bool { return !strings.HasSuffix(e.Name, ".txt") }
	}
	for e, err := range Walk(context.Background(), s, "", "top", listing.Config{}, noTxt) {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Path, ".txt") {
			t.Errorf("filtered entry %s walked", e.Path)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for _, s := range []string{"zip", "tar", "tar.zst"} {
		if f, err := ParseFormat(s); err != nil || string(f) != s {
			t.Errorf("ParseFormat(%q) = %q, %v", s, f, err)
		}
	}
	for _, s := range []string{"", "rar", "ZIP", "tar.gz"} {
		if _, err := ParseFormat(s); err == nil {
			t.Errorf("ParseFormat(%q) accepted", s)
		}
	}
}

func TestTop(t *testing.T) {
	for name, want := range map[string]string{"": "files", "docs": "docs", "a/b c": "b c"} {
		if got := Top(name); got != want {
			t.Errorf("Top(%q) = %q; want %q", name, got, want)
		}
	}
}
