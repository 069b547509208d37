// Package storetest is the behavioural suite every largo.Store must pass.
// A store's own tests call Run with a function that builds a fresh store
// holding a given set of files; the suite then checks reads, metadata,
// listings, errors and the hiding rules the same way for every store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"largo"
)

// Fixture is the content every store under test is created with: names
// (slash-separated, as largo.ParseName returns them) mapped to contents.
// Folders are implied by the names. The folder "many" holds more entries
// than one page of a listing.
var Fixture = withMany(map[string]string{
	"hello.txt":          "hello, world\n",
	"empty":              "",
	"docs/a.md":          "# A\n",
	"docs/deep/b.bin":    strings.Repeat("0123456789", 1000),
	".env":               "SECRET=1",
	"docs/.git/config":   "[core]",
	".largo/tmp/partial": "half",
	"space name.txt":     "spaces",
	"ünï/日本.txt":         "unicode",
})

// manyCount is the number of files in the fixture's folder "many".
const manyCount = 1100

func withMany(m map[string]string) map[string]string {
	for i := range manyCount {
		m[fmt.Sprintf("many/f%04d", i)] = fmt.Sprint(i)
	}
	return m
}

// Run runs the suite. newStore must return a store that holds exactly
// Fixture.
func Run(t *testing.T, newStore func(t *testing.T, files map[string]string) largo.Store) {
	ctx := context.Background()
	s := newStore(t, Fixture)

	t.Run("Open", func(t *testing.T) {
		for name, want := range Fixture {
			if largo.Hidden(name) {
				continue
			}
			f, err := s.Open(ctx, name)
			if err != nil {
				t.Fatalf("Open(%q): %v", name, err)
			}
			got, err := io.ReadAll(f)
			f.Close()
			if err != nil || string(got) != want {
				t.Errorf("Open(%q) read %d bytes, %v; want %d", name, len(got), err, len(want))
			}
			in := f.Info()
			if in.Size != int64(len(want)) || in.IsDir || in.ETag == "" || in.ModTime.IsZero() {
				t.Errorf("Open(%q).Info() = %+v", name, in)
			}
			if i := strings.LastIndexByte(name, '/'); in.Name != name[i+1:] {
				t.Errorf("Open(%q).Info().Name = %q", name, in.Name)
			}
		}
	})

	t.Run("Seek", func(t *testing.T) {
		f, err := s.Open(ctx, "docs/deep/b.bin")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if n, err := f.Seek(-5, io.SeekEnd); err != nil || n != 9995 {
			t.Fatalf("Seek end: %d, %v", n, err)
		}
		b, _ := io.ReadAll(f)
		if string(b) != "56789" {
			t.Fatalf("after Seek read %q", b)
		}
		if _, err := f.Seek(1234, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		b = make([]byte, 3)
		if _, err := io.ReadFull(f, b); err != nil || string(b) != "456" {
			t.Fatalf("read %q, %v", b, err)
		}
	})

	t.Run("Stat", func(t *testing.T) {
		in, err := s.Stat(ctx, "hello.txt")
		if err != nil || in.Size != 13 || in.IsDir {
			t.Errorf("Stat(hello.txt) = %+v, %v", in, err)
		}
		f, err := s.Open(ctx, "hello.txt")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if f.Info().ETag != in.ETag {
			t.Errorf("ETag from Stat %s, from Open %s", in.ETag, f.Info().ETag)
		}
		for _, dir := range []string{"", "docs", "docs/deep"} {
			in, err := s.Stat(ctx, dir)
			if err != nil || !in.IsDir {
				t.Errorf("Stat(%q) = %+v, %v; want a folder", dir, in, err)
			}
		}
	})

	t.Run("Errors", func(t *testing.T) {
		for _, name := range []string{"missing", "docs/missing", "hello.txt/x", "missing/x"} {
			if _, err := s.Open(ctx, name); !errors.Is(err, largo.ErrNotFound) {
				t.Errorf("Open(%q) = %v; want ErrNotFound", name, err)
			}
			if _, err := s.Stat(ctx, name); !errors.Is(err, largo.ErrNotFound) {
				t.Errorf("Stat(%q) = %v; want ErrNotFound", name, err)
			}
		}
		for _, name := range []string{"", "docs"} {
			if _, err := s.Open(ctx, name); !errors.Is(err, largo.ErrIsDir) {
				t.Errorf("Open(%q) = %v; want ErrIsDir", name, err)
			}
		}
		for _, err := range s.List(ctx, "hello.txt") {
			if !errors.Is(err, largo.ErrNotDir) {
				t.Errorf("List(hello.txt) = %v; want ErrNotDir", err)
			}
		}
		for _, err := range s.List(ctx, "missing") {
			if !errors.Is(err, largo.ErrNotFound) {
				t.Errorf("List(missing) = %v; want ErrNotFound", err)
			}
		}
	})

	t.Run("List", func(t *testing.T) {
		for dir, want := range map[string][]string{
			"":     {"docs/", "empty", "hello.txt", "many/", "space name.txt", "ünï/"},
			"docs": {"a.md", "deep/"},
		} {
			var got []string
			for in, err := range s.List(ctx, dir) {
				if err != nil {
					t.Fatalf("List(%q): %v", dir, err)
				}
				n := in.Name
				if in.IsDir {
					n += "/"
				} else if want := Fixture[largo.Join(dir, in.Name)]; in.Size != int64(len(want)) || in.ETag == "" {
					t.Errorf("List(%q): %+v", dir, in)
				}
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("List(%q) = %q; want %q", dir, got, want)
			}
		}
	})

	t.Run("ListPages", func(t *testing.T) {
		seen := map[string]bool{}
		for in, err := range s.List(ctx, "many") {
			if err != nil {
				t.Fatal(err)
			}
			if seen[in.Name] {
				t.Fatalf("List(many) yields %s twice", in.Name)
			}
			seen[in.Name] = true
		}
		if len(seen) != manyCount {
			t.Fatalf("List(many) yields %d entries; want %d", len(seen), manyCount)
		}
	})

	t.Run("ListStops", func(t *testing.T) {
		n := 0
		for range s.List(ctx, "") {
			n++
			break
		}
		if n != 1 {
			t.Fatalf("yielded %d before break", n)
		}
	})
}
