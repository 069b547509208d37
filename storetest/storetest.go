// Package storetest is the behavioural suite every largo.Store must pass.
// A store's own tests call Run (reads), RunWrite (writes and the optional
// capabilities) and RunState (state records) with a function that builds a
// fresh store holding a given set of files; the suite then checks reads,
// metadata, listings, errors and the hiding rules the same way for every
// store.
//
// Each suite is a table of named cases. A case is a function with the
// files it needs, run as a subtest on a store of its own, so that a failure
// names its case and one case runs alone:
//
//	go test ./disk -run 'TestWrite/Conditions'
package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"largo"
)

// fixture is the content most read cases' stores hold: names
// (slash-separated, as largo.ParseName returns them) mapped to contents.
// Folders are implied by the names. It holds hidden names, which no read
// may show.
var fixture = map[string]string{
	"hello.txt":          "hello, world\n",
	"empty":              "",
	"docs/a.md":          "# A\n",
	"docs/deep/b.bin":    strings.Repeat("0123456789", 1000),
	".env":               "SECRET=1",
	"docs/.git/config":   "[core]",
	".largo/tmp/partial": "half",
	"space name.txt":     "spaces",
	"ünï/日本.txt":         "unicode",
}

// manyCount is the number of files in the folder "many" of ListPages:
// more entries than one page of a listing.
const manyCount = 1100

// many returns the files of ListPages: manyCount files in "many".
func many() map[string]string {
	m := make(map[string]string, manyCount)
	for i := range manyCount {
		m[fmt.Sprintf("many/f%04d", i)] = fmt.Sprint(i)
	}
	return m
}

// pick returns the fixture's files of the given names.
func pick(names ...string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n] = fixture[n]
	}
	return m
}

// readCase is one case of Run: the files its store is made with, and the
// check, given that store and those files.
type readCase struct {
	name  string
	files map[string]string
	check func(t *testing.T, s largo.Store, files map[string]string)
}

// readCases are Run's cases.
var readCases = []readCase{
	{"Open", fixture, testOpen},
	{"Seek", pick("docs/deep/b.bin"), testSeek},
	{"Stat", pick("hello.txt", "docs/deep/b.bin"), testStat},
	{"Errors", pick("hello.txt", "docs/a.md"), testErrors},
	{"List", fixture, testList},
	{"ListPages", many(), testListPages},
	{"ListStops", fixture, testListStops},
}

// Run runs the read suite, each case on a store of its own. newStore must
// return a store that holds exactly files.
func Run(t *testing.T, newStore func(t *testing.T, files map[string]string) largo.Store) {
	for _, c := range readCases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, newStore(t, c.files), c.files)
		})
	}
}

// testOpen reads every file that is not hidden, and its Info.
func testOpen(t *testing.T, s largo.Store, files map[string]string) {
	ctx := context.Background()
	for _, name := range slices.Sorted(maps.Keys(files)) {
		want := files[name]
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
}

// testSeek reads from the end and from an offset of docs/deep/b.bin.
func testSeek(t *testing.T, s largo.Store, _ map[string]string) {
	f, err := s.Open(context.Background(), "docs/deep/b.bin")
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
}

// testStat checks a file's Info against Open's, and that the root and the
// folders implied by a name are folders.
func testStat(t *testing.T, s largo.Store, _ map[string]string) {
	ctx := context.Background()
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
}

// testErrors checks the errors of missing names, of folders opened as
// files and of files listed as folders.
func testErrors(t *testing.T, s largo.Store, _ map[string]string) {
	ctx := context.Background()
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
}

// testList lists the root and a folder of the fixture: hidden names never
// show, and each file's size and ETag come with it.
func testList(t *testing.T, s largo.Store, files map[string]string) {
	ctx := context.Background()
	for dir, want := range map[string][]string{
		"":     {"docs/", "empty", "hello.txt", "space name.txt", "ünï/"},
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
			} else if want := files[largo.Join(dir, in.Name)]; in.Size != int64(len(want)) || in.ETag == "" {
				t.Errorf("List(%q): %+v", dir, in)
			}
			got = append(got, n)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q; want %q", dir, got, want)
		}
	}
}

// testListPages lists a folder of more entries than one page: each once.
func testListPages(t *testing.T, s largo.Store, _ map[string]string) {
	seen := map[string]bool{}
	for in, err := range s.List(context.Background(), "many") {
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
}

// testListStops breaks out of a listing after its first entry.
func testListStops(t *testing.T, s largo.Store, _ map[string]string) {
	n := 0
	for range s.List(context.Background(), "") {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("yielded %d before break", n)
	}
}
