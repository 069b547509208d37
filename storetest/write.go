package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"testing"

	"largo"
)

// WritableStore is a store with the write capabilities.
type WritableStore interface {
	largo.Store
	largo.Creator
	largo.Remover
}

// writeCase is one case of RunWrite: the files its store is made with,
// and the check, given that store.
type writeCase struct {
	name  string
	files map[string]string
	check func(t *testing.T, s WritableStore)
}

// writeCases are RunWrite's cases, the optional capabilities' first.
var writeCases = []writeCase{
	{"MakeDir", map[string]string{"file.txt": "x", "dir/a.txt": "a"}, testMakeDir},
	{"Rename", map[string]string{"a.txt": "aaa", "b.txt": "bbb", "dir/c.txt": "ccc", "other/d.txt": "ddd"}, testRename},
	{"Copy", copyFiles(), testCopy},
	{"CreateCommit", map[string]string{"old.txt": "old"}, testCreateCommit},
	{"Abort", map[string]string{"keep.txt": "keep"}, testAbort},
	{"Conditions", map[string]string{"a.txt": "a"}, testConditions},
	{"Names", map[string]string{"file": "f", "dir/x": "x"}, testNames},
	{"Concurrent", nil, testConcurrent},
	{"Remove", map[string]string{"f": "f", "g": "g", "full/a": "a", "full/sub/b": "b"}, testRemove},
}

// RunWrite runs the write suite, each case on a fresh store of its own:
// atomic visibility, conditions, aborts and removals, and the optional
// capabilities the store has (largo.DirMaker, largo.Renamer,
// largo.Copier); a case of a capability the store lacks is skipped.
// newStore must return a fresh writable store holding files.
func RunWrite(t *testing.T, newStore func(t *testing.T, files map[string]string) WritableStore) {
	for _, c := range writeCases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, newStore(t, c.files))
		})
	}
}

// testCreateCommit writes new files, of lengths announced and not, beyond
// one part of a multipart upload, and empty ones; a file appears whole at
// Commit, not before, and a replaced one changes its ETag.
func testCreateCommit(t *testing.T, s WritableStore) {
	ctx := context.Background()
	// Beyond one part of a multipart upload (5 MiB at the least), sent
	// with its length announced and without.
	data := bytes.Repeat([]byte("0123456789abcdef"), 12<<16)
	data = append(data, "tail"...)
	for _, size := range []int64{-1, int64(len(data))} {
		name := fmt.Sprintf("new/deep/file%d.bin", size)
		u := createSized(t, s, name, size, largo.Condition{})
		for p := data; len(p) > 0; p = p[min(len(p), 65536):] {
			if _, err := u.Write(p[:min(len(p), 65536)]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Stat(ctx, name); !errors.Is(err, largo.ErrNotFound) {
			t.Fatalf("size %d: before Commit, Stat = %v; want ErrNotFound", size, err)
		}
		in, created, err := u.Commit(ctx, largo.Condition{})
		if err != nil || !created || in.Size != int64(len(data)) || in.ETag == "" || in.Name != path.Base(name) {
			t.Fatalf("size %d: Commit = %+v, %v, %v", size, in, created, err)
		}
		if got := read(t, s, name); got != string(data) {
			t.Fatalf("size %d: read back %d bytes; want %d", size, len(got), len(data))
		}
		if err := u.Abort(); err != nil {
			t.Errorf("size %d: Abort after Commit: %v", size, err)
		}
		if got := read(t, s, name); got != string(data) {
			t.Fatalf("size %d: Abort after Commit changed the file", size)
		}
	}

	before, _ := s.Stat(ctx, "old.txt")
	in, created := put(t, s, "old.txt", "replaced", largo.Condition{})
	if created || in.ETag == before.ETag || read(t, s, "old.txt") != "replaced" {
		t.Errorf("replace: created %v, ETag %s (was %s)", created, in.ETag, before.ETag)
	}
	for _, size := range []int64{-1, 0} {
		name := fmt.Sprintf("empty%d", size)
		u := createSized(t, s, name, size, largo.Condition{})
		in, created, err := u.Commit(ctx, largo.Condition{})
		if err != nil || !created || in.Size != 0 || read(t, s, name) != "" {
			t.Errorf("empty file, size %d: %+v, created %v, %v", size, in, created, err)
		}
	}
}

// testAbort aborts uploads, new files and replacements, partial and
// whole: nothing appears and nothing changes.
func testAbort(t *testing.T, s WritableStore) {
	ctx := context.Background()
	for _, name := range []string{"keep.txt", "gone.txt", "dir/gone.txt"} {
		for _, size := range []int64{-1, 100} {
			u := createSized(t, s, name, size, largo.Condition{})
			io.WriteString(u, "partial")
			if err := u.Abort(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := u.Commit(ctx, largo.Condition{}); err == nil {
				t.Errorf("Commit after Abort succeeded")
			}
		}
	}
	// An upload whose whole announced body arrived, then aborted (a
	// digest that does not match): nothing appears either.
	u := createSized(t, s, "whole.txt", 5, largo.Condition{})
	io.WriteString(u, "whole")
	if err := u.Abort(); err != nil {
		t.Fatal(err)
	}
	if read(t, s, "keep.txt") != "keep" {
		t.Error("aborted replacement changed the file")
	}
	for _, name := range []string{"gone.txt", "dir/gone.txt", "dir", "whole.txt"} {
		if _, err := s.Stat(ctx, name); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("after Abort, Stat(%q) = %v", name, err)
		}
	}
	if got := names(t, s, ""); got != "keep.txt" {
		t.Errorf("root holds %s after aborts", got)
	}
}

// testConditions writes under If-None-Match and If-Match conditions, met
// and not, with lengths announced and not, in one PUT and in parts: a
// condition not met is ErrPrecondition and leaves the target as it was.
func testConditions(t *testing.T, s WritableStore) {
	ctx := context.Background()
	big := strings.Repeat("large ", 1<<20) // beyond one part
	// current stands for the target's ETag at the time of the write.
	const current = "current"
	for _, tt := range []struct {
		name string
		cond largo.Condition
		ok   bool
	}{
		{"a.txt", largo.Condition{IfNoneMatch: true}, false},
		{"a.txt", largo.Condition{IfMatch: `"stale"`}, false},
		{"missing.txt", largo.Condition{IfMatch: "*"}, false},
		{"missing.txt", largo.Condition{IfMatch: current}, false},
		{"b.txt", largo.Condition{IfNoneMatch: true}, true},
		{"a.txt", largo.Condition{IfMatch: current}, true},
		{"a.txt", largo.Condition{IfMatch: "*"}, true},
	} {
		for i, content := range []string{"new", "new", big} {
			size := int64(-1)
			if i == 1 {
				size = int64(len(content))
			}
			name := tt.name
			if tt.ok && tt.cond.IfNoneMatch {
				name = fmt.Sprintf("%d-%s", i, name)
			}
			before, _ := s.Stat(ctx, name)
			cond := tt.cond
			if cond.IfMatch == current {
				cond.IfMatch = before.ETag
				if tt.name == "missing.txt" {
					a, _ := s.Stat(ctx, "a.txt")
					cond.IfMatch = a.ETag
				}
			}
			u, err := s.Create(ctx, name, largo.CreateOptions{Size: size, Condition: cond})
			if err == nil {
				io.WriteString(u, content)
				_, _, err = u.Commit(ctx, cond)
				u.Abort()
			}
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, largo.ErrPrecondition)) {
				t.Errorf("%s %+v, %d bytes, size %d: %v", name, cond, len(content), size, err)
			}
			if after, _ := s.Stat(ctx, name); !tt.ok && after != before {
				t.Errorf("%s %+v, size %d: failed commit changed the target", name, cond, size)
			}
			if tt.ok && read(t, s, name) != content {
				t.Errorf("%s %+v, size %d: content not stored", name, cond, size)
			}
		}
	}
}

// testNames creates at names that cannot be files (a folder, below a
// file, in a missing folder with NoMkdir).
func testNames(t *testing.T, s WritableStore) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		opt  largo.CreateOptions
		want error
	}{
		{"", largo.CreateOptions{}, largo.ErrIsDir},
		{"dir", largo.CreateOptions{}, largo.ErrIsDir},
		{"file/below", largo.CreateOptions{}, largo.ErrNotDir},
		{"missing/x", largo.CreateOptions{NoMkdir: true}, largo.ErrNotFound},
	} {
		u, err := s.Create(ctx, tt.name, tt.opt)
		if !errors.Is(err, tt.want) {
			t.Errorf("Create(%q, %+v) = %v; want %v", tt.name, tt.opt, err, tt.want)
		}
		if u != nil {
			u.Abort()
		}
	}
	put(t, s, "dir/y", "y", largo.Condition{})
	u, err := s.Create(ctx, "dir/z", largo.CreateOptions{NoMkdir: true})
	if err != nil {
		t.Fatalf("NoMkdir into an existing folder: %v", err)
	}
	u.Abort()
}

// testConcurrent races eight writers to one name: the file is one whole
// upload.
func testConcurrent(t *testing.T, s WritableStore) {
	ctx := context.Background()
	const n = 8
	contents := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		contents[i] = strings.Repeat(fmt.Sprintf("writer %d;", i), 20000+i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := s.Create(ctx, "same", largo.CreateOptions{Size: -1})
			if err != nil {
				t.Error(err)
				return
			}
			for p := contents[i]; len(p) > 0; p = p[min(len(p), 4096):] {
				io.WriteString(u, p[:min(len(p), 4096)])
			}
			if _, _, err := u.Commit(ctx, largo.Condition{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := read(t, s, "same")
	whole := false
	for _, c := range contents {
		whole = whole || got == c
	}
	if !whole {
		t.Fatalf("the file (%d bytes) is not one whole upload", len(got))
	}
}

// testRemove removes files and folders, under conditions and not, and
// what becomes of a folder emptied of its last file.
func testRemove(t *testing.T, s WritableStore) {
	ctx := context.Background()
	put(t, s, "emptydir/x", "x", largo.Condition{})
	if err := s.Remove(ctx, "emptydir/x", largo.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	g, _ := s.Stat(ctx, "g")
	for _, tt := range []struct {
		name string
		opt  largo.RemoveOptions
		want error
	}{
		{"", largo.RemoveOptions{Recursive: true}, largo.ErrPermission},
		{"missing", largo.RemoveOptions{}, largo.ErrNotFound},
		{"full", largo.RemoveOptions{}, largo.ErrNotEmpty},
		{"g", largo.RemoveOptions{Condition: largo.Condition{IfMatch: `"stale"`}}, largo.ErrPrecondition},
		{"f", largo.RemoveOptions{}, nil},
		{"g", largo.RemoveOptions{Condition: largo.Condition{IfMatch: g.ETag}}, nil},
		{"full", largo.RemoveOptions{Recursive: true}, nil},
	} {
		err := s.Remove(ctx, tt.name, tt.opt)
		if (tt.want == nil) != (err == nil) || !errors.Is(err, tt.want) {
			t.Errorf("Remove(%q, %+v) = %v; want %v", tt.name, tt.opt, err, tt.want)
		}
		if err == nil {
			if _, err := s.Stat(ctx, tt.name); !errors.Is(err, largo.ErrNotFound) {
				t.Errorf("after Remove(%q), Stat = %v", tt.name, err)
			}
		}
	}
	if _, err := s.Stat(ctx, "full/sub/b"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("recursive removal left full/sub/b: %v", err)
	}
	// A folder emptied of its last file: a folder store keeps it until
	// it is removed; in an object store a folder is only a prefix of
	// keys, gone with the last key.
	in, err := s.Stat(ctx, "emptydir")
	switch {
	case err == nil && in.IsDir:
		if err := s.Remove(ctx, "emptydir", largo.RemoveOptions{}); err != nil {
			t.Errorf("Remove(emptied folder) = %v", err)
		}
		if _, err := s.Stat(ctx, "emptydir"); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("after Remove(emptydir), Stat = %v", err)
		}
	case errors.Is(err, largo.ErrNotFound):
		if err := s.Remove(ctx, "emptydir", largo.RemoveOptions{}); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("Remove(vanished folder) = %v; want ErrNotFound", err)
		}
	default:
		t.Errorf("Stat(emptied folder) = %+v, %v", in, err)
	}
}

// createSized starts an upload of size bytes (-1: unknown) to name that
// will be committed under cond.
func createSized(t *testing.T, s WritableStore, name string, size int64, cond largo.Condition) largo.Upload {
	t.Helper()
	u, err := s.Create(context.Background(), name, largo.CreateOptions{Size: size, Condition: cond})
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	return u
}

func put(t *testing.T, s WritableStore, name, content string, cond largo.Condition) (largo.Info, bool) {
	t.Helper()
	u := createSized(t, s, name, int64(len(content)), cond)
	if _, err := io.WriteString(u, content); err != nil {
		t.Fatal(err)
	}
	in, created, err := u.Commit(context.Background(), cond)
	if err != nil {
		t.Fatalf("Commit(%q): %v", name, err)
	}
	return in, created
}

func read(t *testing.T, s largo.Store, name string) string {
	t.Helper()
	f, err := s.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// names lists a folder's entries, comma-separated, in listing order.
func names(t *testing.T, s largo.Store, dir string) string {
	t.Helper()
	var got []string
	for in, err := range s.List(context.Background(), dir) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, in.Name)
	}
	return strings.Join(got, ",")
}
