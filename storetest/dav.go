package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"largo"
)

// The cases of the optional capabilities WebDAV uses, each skipped when
// the store lacks it: folders made (largo.DirMaker), renamed
// (largo.Renamer), and files copied by the store (largo.Copier).

// testMakeDir makes a folder, one in it, and folders where something is
// or where none can be.
func testMakeDir(t *testing.T, s WritableStore) {
	ctx := context.Background()
	dm, ok := s.(largo.DirMaker)
	if !ok {
		t.Skip("no largo.DirMaker")
	}
	if err := dm.MakeDir(ctx, "empty"); err != nil {
		t.Fatalf("MakeDir(empty): %v", err)
	}
	if in, err := s.Stat(ctx, "empty"); err != nil || !in.IsDir {
		t.Errorf("Stat(empty) = %+v, %v; want a folder", in, err)
	}
	if got := names(t, s, "empty"); got != "" {
		t.Errorf("the new folder lists %q", got)
	}
	for _, tc := range []struct {
		name string
		want error
	}{
		{"empty", largo.ErrExist},
		{"dir", largo.ErrExist},
		{"file.txt", largo.ErrExist},
		{"missing/sub", largo.ErrNotFound},
		{"file.txt/sub", largo.ErrNotDir},
	} {
		if err := dm.MakeDir(ctx, tc.name); !errors.Is(err, tc.want) {
			t.Errorf("MakeDir(%s) = %v; want %v", tc.name, err, tc.want)
		}
	}
	if err := dm.MakeDir(ctx, "empty/sub"); err != nil {
		t.Errorf("MakeDir in the new folder: %v", err)
	}
}

// testRename renames a file over another, a folder, and what cannot be
// renamed: over a folder, into a missing folder, a missing file.
func testRename(t *testing.T, s WritableStore) {
	ctx := context.Background()
	rn, ok := s.(largo.Renamer)
	if !ok {
		t.Skip("no largo.Renamer")
	}
	if err := rn.Rename(ctx, "a.txt", "b.txt"); err != nil {
		t.Fatalf("Rename over a file: %v", err)
	}
	if got := read(t, s, "b.txt"); got != "aaa" {
		t.Errorf("b.txt = %q after the rename; want aaa", got)
	}
	if _, err := s.Stat(ctx, "a.txt"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("Stat(a.txt) after the rename: %v", err)
	}
	if err := rn.Rename(ctx, "dir", "moved"); err != nil {
		t.Fatalf("Rename of a folder: %v", err)
	}
	if got := read(t, s, "moved/c.txt"); got != "ccc" {
		t.Errorf("moved/c.txt = %q", got)
	}
	if err := rn.Rename(ctx, "b.txt", "other"); !errors.Is(err, largo.ErrIsDir) {
		t.Errorf("Rename over a folder = %v; want ErrIsDir", err)
	}
	if err := rn.Rename(ctx, "b.txt", "nowhere/b.txt"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("Rename into a missing folder = %v; want ErrNotFound", err)
	}
	if err := rn.Rename(ctx, "gone.txt", "x.txt"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("Rename of a missing file = %v; want ErrNotFound", err)
	}
}

// copyBig is the large file of testCopy: beyond the smallest part of a
// multipart copy (5 MiB).
var copyBig = string(bytes.Repeat([]byte("0123456789abcdef"), 6<<16))

// copyFiles returns the files of testCopy.
func copyFiles() map[string]string {
	return map[string]string{"src.bin": copyBig, "old.txt": "old", "empty.txt": ""}
}

// testCopy copies files within the store, into a new folder, over a file
// and empty; an aborted copy leaves nothing, and a missing file is
// ErrNotFound.
func testCopy(t *testing.T, s WritableStore) {
	ctx := context.Background()
	cp, ok := s.(largo.Copier)
	if !ok {
		t.Skip("no largo.Copier")
	}
	for _, tc := range []struct{ src, dst, want string }{
		{"src.bin", "copy/deep.bin", copyBig},
		{"src.bin", "old.txt", copyBig},
		{"empty.txt", "empty2.txt", ""},
	} {
		u, err := cp.Copy(ctx, tc.dst, tc.src, largo.CreateOptions{Size: int64(len(tc.want))})
		if err != nil {
			t.Fatalf("Copy(%s, %s): %v", tc.dst, tc.src, err)
		}
		in, _, err := u.Commit(ctx, largo.Condition{})
		if err != nil || in.Size != int64(len(tc.want)) {
			t.Fatalf("Commit of the copy to %s = %+v, %v", tc.dst, in, err)
		}
		if got := read(t, s, tc.dst); got != tc.want {
			t.Errorf("%s holds %d bytes; want %d", tc.dst, len(got), len(tc.want))
		}
	}
	if got := read(t, s, "src.bin"); got != copyBig {
		t.Errorf("the source changed")
	}
	u, err := cp.Copy(ctx, "aborted.bin", "src.bin", largo.CreateOptions{Size: int64(len(copyBig))})
	if err != nil {
		t.Fatal(err)
	}
	u.Abort()
	if _, err := s.Stat(ctx, "aborted.bin"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("an aborted copy is there: %v", err)
	}
	if _, err := cp.Copy(ctx, "x.bin", "missing.bin", largo.CreateOptions{}); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("Copy of a missing file = %v; want ErrNotFound", err)
	}
}
