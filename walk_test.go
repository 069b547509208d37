package largo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"largo"
	"largo/disk"
)

// TestWalkFiles: every file at or below a name, once, with its full name;
// a folder reached through a symbolic link is not entered.
func TestWalkFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a/x", "a/b/y", "a/b/c/z", "other/w"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../other", filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	walk := func(name string) ([]string, error) {
		var got []string
		err := largo.WalkFiles(ctx, st, name, func(n string, in largo.Info) {
			if in.IsDir {
				t.Errorf("%s given as a file", n)
			}
			got = append(got, n)
		})
		slices.Sort(got)
		return got, err
	}
	if got, err := walk("a"); err != nil || !slices.Equal(got, []string{"a/b/c/z", "a/b/y", "a/x"}) {
		t.Errorf("walk of a: %v, %v", got, err)
	}
	if got, err := walk("a/x"); err != nil || !slices.Equal(got, []string{"a/x"}) {
		t.Errorf("walk of a file: %v, %v", got, err)
	}
	if got, err := walk("missing"); !errors.Is(err, largo.ErrNotFound) || len(got) != 0 {
		t.Errorf("walk of nothing: %v, %v", got, err)
	}
}
