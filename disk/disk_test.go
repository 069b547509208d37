package disk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"largo"
	"largo/storetest"

	"largo/internal/testenv"
)

// makeTree writes files under a new temporary folder and returns it.
func makeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, files map[string]string) largo.Store {
		s, err := Open(makeTree(t, files))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Open(missing) succeeded")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := Open(f); err == nil {
		t.Error("Open(file) succeeded")
	}
}

func TestETagChanges(t *testing.T) {
	dir := makeTree(t, map[string]string{"f": "one"})
	s, _ := Open(dir)
	defer s.Close()
	ctx := context.Background()
	a, _ := s.Stat(ctx, "f")
	os.WriteFile(filepath.Join(dir, "f.new"), []byte("two"), 0o644)
	os.Rename(filepath.Join(dir, "f.new"), filepath.Join(dir, "f"))
	b, _ := s.Stat(ctx, "f")
	if a.ETag == b.ETag {
		t.Fatalf("ETag unchanged after replace: %s", a.ETag)
	}
}

func TestWrite(t *testing.T) {
	storetest.RunWrite(t, func(t *testing.T, files map[string]string) storetest.WritableStore {
		dir := makeTree(t, files)
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			s.Close()
			// Whatever happened, nothing is left in the temporary folder.
			ents, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(TempDir)))
			if len(ents) != 0 {
				t.Errorf("%d files left in %s", len(ents), TempDir)
			}
		})
		return s
	})
}

func TestAdoptAndSweep(t *testing.T) {
	live := fmt.Sprintf(".largo/tmp/%d-live.part", os.Getppid())
	dir := makeTree(t, map[string]string{
		".largo/tus/abc":                                       "staged bytes",
		".largo/tmp/orphan.part":                               "left by an older largo",
		".largo/tmp/2147483646-x.part":                         "left by a process that is gone",
		fmt.Sprintf(".largo/tmp/%d-same-id.part", os.Getpid()): "left by a gone process with this one's ID",
		live:     "being written by another process",
		"target": "old",
	})
	os.Chmod(filepath.Join(dir, "target"), 0o600)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	// What processes that are gone left goes at once; what a live one
	// writes stays until it is old.
	if n, err := s.PrepareWrites(ctx); n != 3 || err != nil {
		t.Fatalf("PrepareWrites = %d, %v", n, err)
	}
	if n, err := s.Sweep(ctx, time.Now().Add(-time.Hour)); n != 0 || err != nil {
		t.Fatalf("Sweep of what is older than an hour = %d, %v", n, err)
	}
	if n, err := s.Sweep(ctx, time.Now().Add(time.Minute)); n != 1 || err != nil {
		t.Fatalf("Sweep of what is older than a minute from now = %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".largo/tus/abc")); err != nil {
		t.Fatalf("Sweep touched a staged upload: %v", err)
	}
	if _, err := s.Adopt(ctx, "x", ".largo/missing", largo.CreateOptions{}); err == nil {
		t.Errorf("Adopt of a missing file succeeded")
	}
	u, err := s.Adopt(ctx, "target", ".largo/tus/abc", largo.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write([]byte("more")); err == nil {
		t.Fatal("an adopted upload took more bytes")
	}
	if _, created, err := u.Commit(ctx, largo.Condition{}); err != nil || created {
		t.Fatalf("Commit: %v, created %v", err, created)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "target"))
	fi, _ := os.Stat(filepath.Join(dir, "target"))
	if string(b) != "staged bytes" || fi.Mode().Perm() != 0o600 {
		t.Fatalf("target %q, mode %v", b, fi.Mode())
	}
	if _, err := os.Stat(filepath.Join(dir, ".largo/tus/abc")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("staged file still there: %v", err)
	}
	free, err := s.Free(ctx, "")
	if err != nil || free <= 0 {
		t.Fatalf("Free = %d, %v", free, err)
	}
}

func TestState(t *testing.T) {
	s, err := Open(makeTree(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.RunState(t, s.State())
}

// TestStateShared: two stores on one folder, as two processes would
// have, swap records under one lock file.
func TestStateShared(t *testing.T) {
	dir := makeTree(t, nil)
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	storetest.RunStateShared(t, a.State(), b.State())
}

// TestListLeavesOutBadNames: a file whose name no request can name (a
// backslash, a control byte) is neither listed nor, so, archived.
func TestListLeavesOutBadNames(t *testing.T) {
	dir := makeTree(t, map[string]string{"ok.txt": "ok"})
	for _, bad := range []string{`a\b.txt`, "bell\x07.txt", "new\nline.txt"} {
		if err := os.WriteFile(filepath.Join(dir, bad), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var names []string
	for in, err := range s.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, in.Name)
	}
	if len(names) != 1 || names[0] != "ok.txt" {
		t.Errorf("listed %q", names)
	}
}

// TestCommitAcrossFilesystems: a folder inside the served one may be
// another filesystem (a mount), where no rename from the temporary folder
// reaches: the upload still lands whole, and nothing is left behind.
func TestCommitAcrossFilesystems(t *testing.T) {
	dir := makeTree(t, map[string]string{"mnt/.keep": ""})
	mnt := filepath.Join(dir, "mnt")
	testenv.Tmpfs(t, mnt, "8m", "to test a commit across filesystems")
	os.WriteFile(filepath.Join(mnt, "old.bin"), []byte("old"), 0o600)
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, name := range []string{"mnt/new.bin", "mnt/old.bin"} {
		u, err := s.Create(ctx, name, largo.CreateOptions{Size: 5})
		if err != nil {
			t.Fatal(err)
		}
		u.Write([]byte("whole"))
		if _, _, err := u.Commit(ctx, largo.Condition{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != "whole" {
			t.Errorf("%s holds %q", name, b)
		}
	}
	if fi, _ := os.Stat(filepath.Join(mnt, "old.bin")); fi.Mode().Perm() != 0o600 {
		t.Errorf("the replaced file's mode %v", fi.Mode())
	}
	var names []string
	ents, _ := os.ReadDir(mnt)
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "new.bin,old.bin" {
		t.Errorf("the mount holds %v", names)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(TempDir))); len(ents) != 0 {
		t.Errorf("%d files left in %s", len(ents), TempDir)
	}
}

// TestOutOfDescriptors: when the process has no file descriptor left, an
// open is ErrBusy (503, try again), not an internal error.
func TestOutOfDescriptors(t *testing.T) {
	dir := makeTree(t, map[string]string{"f": "f"})
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		testenv.Missing(t, "cannot read the descriptor limit (%v): the test lowers it to run out of descriptors", err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	var held []*os.File
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	lim := syscall.Rlimit{Cur: 256, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		testenv.Missing(t, "cannot lower the descriptor limit (%v): the test runs out of descriptors that way", err)
	}
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		held = append(held, f)
		if len(held) > 300 {
			t.Fatal("the limit does not hold")
		}
	}
	_, err = s.Open(context.Background(), "f")
	if !errors.Is(err, largo.ErrBusy) {
		t.Errorf("Open with no descriptor left: %v; want ErrBusy", err)
	}
}
