package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
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

// RunWrite runs the write suite: atomic visibility, conditions, aborts and
// removals. newStore must return a fresh writable store holding files.
func RunWrite(t *testing.T, newStore func(t *testing.T, files map[string]string) WritableStore) {
	ctx := context.Background()

	t.Run("CreateCommit", func(t *testing.T) {
		s := newStore(t, map[string]string{"old.txt": "old"})
		u := create(t, s, "new/deep/file.bin")
		data := bytes.Repeat([]byte("0123456789abcdef"), 70000)
		for p := data; len(p) > 0; p = p[min(len(p), 65536):] {
			if _, err := u.Write(p[:min(len(p), 65536)]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Stat(ctx, "new/deep/file.bin"); !errors.Is(err, largo.ErrNotFound) {
			t.Fatalf("before Commit, Stat = %v; want ErrNotFound", err)
		}
		if u.Written() != int64(len(data)) || u.SHA256() != sha256.Sum256(data) {
			t.Fatalf("Written %d, SHA256 %x", u.Written(), u.SHA256())
		}
		in, created, err := u.Commit(ctx, largo.Condition{})
		if err != nil || !created || in.Size != int64(len(data)) || in.ETag == "" || in.Name != "file.bin" {
			t.Fatalf("Commit = %+v, %v, %v", in, created, err)
		}
		if got := read(t, s, "new/deep/file.bin"); got != string(data) {
			t.Fatalf("read back %d bytes; want %d", len(got), len(data))
		}
		if err := u.Abort(); err != nil {
			t.Errorf("Abort after Commit: %v", err)
		}
		if got := read(t, s, "new/deep/file.bin"); got != string(data) {
			t.Fatal("Abort after Commit changed the file")
		}

		before, _ := s.Stat(ctx, "old.txt")
		in, created = put(t, s, "old.txt", "replaced", largo.Condition{})
		if created || in.ETag == before.ETag || read(t, s, "old.txt") != "replaced" {
			t.Errorf("replace: created %v, ETag %s (was %s)", created, in.ETag, before.ETag)
		}
		in, created = put(t, s, "empty", "", largo.Condition{})
		if !created || in.Size != 0 {
			t.Errorf("empty file: %+v, created %v", in, created)
		}
	})

	t.Run("Abort", func(t *testing.T) {
		s := newStore(t, map[string]string{"keep.txt": "keep"})
		for _, name := range []string{"keep.txt", "gone.txt", "dir/gone.txt"} {
			u := create(t, s, name)
			io.WriteString(u, "partial")
			if err := u.Abort(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := u.Commit(ctx, largo.Condition{}); err == nil {
				t.Errorf("Commit after Abort succeeded")
			}
		}
		if read(t, s, "keep.txt") != "keep" {
			t.Error("aborted replacement changed the file")
		}
		for _, name := range []string{"gone.txt", "dir/gone.txt", "dir"} {
			if _, err := s.Stat(ctx, name); !errors.Is(err, largo.ErrNotFound) {
				t.Errorf("after Abort, Stat(%q) = %v", name, err)
			}
		}
		if got := names(t, s, ""); got != "keep.txt" {
			t.Errorf("root holds %s after aborts", got)
		}
	})

	t.Run("Conditions", func(t *testing.T) {
		s := newStore(t, map[string]string{"a.txt": "a"})
		a, _ := s.Stat(ctx, "a.txt")
		for _, tt := range []struct {
			name string
			cond largo.Condition
			ok   bool
		}{
			{"a.txt", largo.Condition{IfNoneMatch: true}, false},
			{"a.txt", largo.Condition{IfMatch: `"stale"`}, false},
			{"missing.txt", largo.Condition{IfMatch: "*"}, false},
			{"missing.txt", largo.Condition{IfMatch: a.ETag}, false},
			{"b.txt", largo.Condition{IfNoneMatch: true}, true},
			{"a.txt", largo.Condition{IfMatch: a.ETag}, true},
			{"a.txt", largo.Condition{IfMatch: "*"}, true},
		} {
			before, _ := s.Stat(ctx, tt.name)
			u := create(t, s, tt.name)
			io.WriteString(u, "new")
			_, _, err := u.Commit(ctx, tt.cond)
			if tt.ok != (err == nil) || (err != nil && !errors.Is(err, largo.ErrPrecondition)) {
				t.Errorf("%s %+v: %v", tt.name, tt.cond, err)
			}
			if after, _ := s.Stat(ctx, tt.name); !tt.ok && after != before {
				t.Errorf("%s %+v: failed commit changed the target", tt.name, tt.cond)
			}
		}
	})

	t.Run("Names", func(t *testing.T) {
		s := newStore(t, map[string]string{"file": "f", "dir/x": "x"})
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
	})

	t.Run("Concurrent", func(t *testing.T) {
		s := newStore(t, nil)
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
	})

	t.Run("Remove", func(t *testing.T) {
		s := newStore(t, map[string]string{"f": "f", "g": "g", "full/a": "a", "full/sub/b": "b"})
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
			{"emptydir", largo.RemoveOptions{}, nil},
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
	})
}

func create(t *testing.T, s WritableStore, name string) largo.Upload {
	t.Helper()
	u, err := s.Create(context.Background(), name, largo.CreateOptions{Size: -1})
	if err != nil {
		t.Fatalf("Create(%q): %v", name, err)
	}
	return u
}

func put(t *testing.T, s WritableStore, name, content string, cond largo.Condition) (largo.Info, bool) {
	t.Helper()
	u := create(t, s, name)
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
