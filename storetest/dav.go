package storetest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"largo"
)

// runCapabilities runs the checks of the optional capabilities WebDAV
// uses, for those the store has: folders made (largo.DirMaker), renamed
// (largo.Renamer), and files copied by the store (largo.Copier).
func runCapabilities(t *testing.T, newStore func(t *testing.T, files map[string]string) WritableStore) {
	ctx := context.Background()
	t.Run("MakeDir", func(t *testing.T) {
		s := newStore(t, map[string]string{"file.txt": "x", "dir/a.txt": "a"})
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
	})
	t.Run("Rename", func(t *testing.T) {
		s := newStore(t, map[string]string{"a.txt": "aaa", "b.txt": "bbb", "dir/c.txt": "ccc", "other/d.txt": "ddd"})
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
	})
	t.Run("Copy", func(t *testing.T) {
		// Beyond the smallest part of a multipart copy (5 MiB).
		big := bytes.Repeat([]byte("0123456789abcdef"), 6<<16)
		s := newStore(t, map[string]string{"src.bin": string(big), "old.txt": "old", "empty.txt": ""})
		cp, ok := s.(largo.Copier)
		if !ok {
			t.Skip("no largo.Copier")
		}
		for _, tc := range []struct{ src, dst, want string }{
			{"src.bin", "copy/deep.bin", string(big)},
			{"src.bin", "old.txt", string(big)},
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
		if got := read(t, s, "src.bin"); got != string(big) {
			t.Errorf("the source changed")
		}
		u, err := cp.Copy(ctx, "aborted.bin", "src.bin", largo.CreateOptions{Size: int64(len(big))})
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
	})
}

// runStateCreate checks a State that creates records only where none is:
// of concurrent creates of one key exactly one succeeds, the others get
// ErrExist.
func runStateCreate(t *testing.T, st largo.State) {
	sc, ok := st.(largo.StateCreator)
	if !ok {
		t.Log("no largo.StateCreator")
		return
	}
	ctx := context.Background()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = sc.Create(ctx, "lease/one", []byte{byte('a' + i)}) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Errorf("creates %d and %d both succeeded", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, largo.ErrExist):
			t.Errorf("create %d: %v; want ErrExist", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no create succeeded")
	}
	if b, err := st.Get(ctx, "lease/one"); err != nil || string(b) != string(rune('a'+won)) {
		t.Errorf("record = %q, %v; want the winner's", b, err)
	}
	if err := st.Delete(ctx, "lease/one"); err != nil {
		t.Fatal(err)
	}
	if err := sc.Create(ctx, "lease/one", []byte("again")); err != nil {
		t.Errorf("Create after Delete: %v", err)
	}
	st.Delete(ctx, "lease/one")
}
