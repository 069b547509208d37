package largo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"largo"
	"largo/disk"
)

// TestCheckParent: a new name's folder must be there, and be a folder.
func TestCheckParent(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "f"), []byte("f"), 0o644)
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for name, want := range map[string]error{
		"new":      nil,
		"a/new":    nil,
		"a/b/new":  nil,
		"a/no/new": largo.ErrMissingFolder,
		"no/b/new": largo.ErrMissingFolder,
		"a/f/new":  largo.ErrParentNotDir,
	} {
		if err := largo.CheckParent(context.Background(), s, name); !errors.Is(err, want) || (err == nil) != (want == nil) {
			t.Errorf("CheckParent(%q) = %v; want %v", name, err, want)
		}
	}
}
