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

// runStateSwap checks a State that replaces and removes records only as
// they were read: of concurrent takeovers of one version exactly one
// succeeds, the others get ErrPrecondition; a stale or missing version
// neither replaces nor removes. The takers take turns among sts, each
// an instance of one store.
func runStateSwap(t *testing.T, sts ...largo.State) {
	st := sts[0]
	var sws []largo.StateSwapper
	for _, s := range sts {
		sw, ok := s.(largo.StateSwapper)
		if !ok {
			t.Log("no largo.StateSwapper")
			return
		}
		sws = append(sws, sw)
	}
	sw := sws[0]
	ctx := context.Background()
	const key = "lease/swap"
	if _, _, err := sw.GetVersion(ctx, key); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("GetVersion of a missing record: %v; want ErrNotFound", err)
	}
	if err := st.Put(ctx, key, []byte("expired")); err != nil {
		t.Fatal(err)
	}
	b, v0, err := sw.GetVersion(ctx, key)
	if err != nil || string(b) != "expired" || v0 == "" {
		t.Fatalf("GetVersion = %q, %q, %v", b, v0, err)
	}
	const n = 8
	for round := range 3 {
		// Every taker read the same version; exactly one may replace it.
		var wg sync.WaitGroup
		errs := make([]error, n)
		vers := make([]string, n)
		for i := range n {
			wg.Go(func() {
				vers[i], errs[i] = sws[i%len(sws)].Swap(ctx, key, []byte{byte('a' + round), byte('a' + i)}, v0)
			})
		}
		wg.Wait()
		won := -1
		for i, err := range errs {
			switch {
			case err == nil && won >= 0:
				t.Errorf("round %d: takeovers %d and %d both succeeded", round, won, i)
			case err == nil:
				won = i
			case !errors.Is(err, largo.ErrPrecondition):
				t.Errorf("round %d: takeover %d: %v; want ErrPrecondition", round, i, err)
			}
		}
		if won < 0 {
			t.Fatalf("round %d: no takeover succeeded", round)
		}
		b, v1, err := sw.GetVersion(ctx, key)
		if err != nil || string(b) != string([]byte{byte('a' + round), byte('a' + won)}) {
			t.Fatalf("round %d: record = %q, %v; want the winner's", round, b, err)
		}
		if v1 == v0 {
			t.Errorf("round %d: the version did not change with the record", round)
		}
		if vers[won] != v1 {
			t.Errorf("round %d: Swap returned version %q, GetVersion %q", round, vers[won], v1)
		}
		v0 = v1
	}
	if _, err := sw.Swap(ctx, key, []byte("late"), "stale"); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("Swap of a stale version: %v; want ErrPrecondition", err)
	}
	if err := sw.DeleteIf(ctx, key, "stale"); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("DeleteIf of a stale version: %v; want ErrPrecondition", err)
	}
	if _, err := st.Get(ctx, key); err != nil {
		t.Errorf("the record went with a stale DeleteIf: %v", err)
	}
	if err := sw.DeleteIf(ctx, key, v0); err != nil {
		t.Errorf("DeleteIf of the current version: %v", err)
	}
	if _, err := st.Get(ctx, key); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("Get after DeleteIf: %v; want ErrNotFound", err)
	}
	if err := sw.DeleteIf(ctx, key, v0); err != nil {
		t.Errorf("DeleteIf of a record gone: %v; want no error", err)
	}
	if _, err := sw.Swap(ctx, key, []byte("back"), v0); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("Swap of a record gone: %v; want ErrPrecondition", err)
	}
	if _, err := st.Get(ctx, key); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("a Swap of a record gone made it: %v", err)
	}
}
