package disk

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// watched returns a store on a folder with the files a/b/f and top, and a
// Watcher of it watching the folders on the way to a/b/f.
func watched(t *testing.T, max int) (string, *Watcher) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a/b/f", "top"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w, err := s.NewWatcher(max)
	if err != nil {
		t.Skip("no inotify here:", err)
	}
	t.Cleanup(func() { w.Close() })
	if _, ok := w.Watch("a/b/f"); !ok {
		t.Fatal("a/b/f: folders not watched")
	}
	return dir, w
}

func TestWatcherCountsChanges(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(dir string) error
	}{
		{"written in place", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("y"), 0o644)
		}},
		{"replaced by a rename", func(dir string) error {
			p := filepath.Join(dir, "a/b/f")
			if err := os.WriteFile(p+".new", []byte("y"), 0o644); err != nil {
				return err
			}
			return os.Rename(p+".new", p)
		}},
		{"removed", func(dir string) error { return os.Remove(filepath.Join(dir, "a/b/f")) }},
		{"its folder moved away", func(dir string) error {
			return os.Rename(filepath.Join(dir, "a/b"), filepath.Join(dir, "a/c"))
		}},
		{"a folder above it swapped for a link", func(dir string) error {
			if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "z")); err != nil {
				return err
			}
			return os.Symlink("z", filepath.Join(dir, "a"))
		}},
		{"its time changed", func(dir string) error {
			return os.Chtimes(filepath.Join(dir, "a/b/f"), time.Unix(1, 0), time.Unix(1, 0))
		}},
		{"a file beside the root's", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "top"), []byte("y"), 0o644)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, w := watched(t, 100)
			before := w.Drain()
			if again := w.Drain(); again != before {
				t.Fatalf("count moved from %d to %d with nothing changed", before, again)
			}
			if err := tt.change(dir); err != nil {
				t.Fatal(err)
			}
			if after := w.Drain(); after == before {
				t.Fatal("the change was not counted")
			}
		})
	}
}

// A folder made where a watched one was is watched when asked for again;
// the one moved away is no longer.
func TestWatcherFollowsFolderReplaced(t *testing.T) {
	dir, w := watched(t, 100)
	if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	before, ok := w.Watch("a/b/f")
	if !ok {
		t.Fatal("the new a/b is not watched")
	}
	if err := os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w.Drain() == before {
		t.Fatal("a file made in the new folder was not counted")
	}
}

func TestWatcherRefusesLinksAndBounds(t *testing.T) {
	dir, w := watched(t, 3)
	if err := os.Symlink("a", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Watch("l/b/f"); ok {
		t.Fatal("a folder reached through a link is reported watched")
	}
	// A bound of 3, three folders watched (root, a, a/b), and one more
	// asked for: watched anew.
	if err := os.Mkdir(filepath.Join(dir, "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.Watch("c/f"); !ok {
		t.Fatal("c/f not watched past the bound")
	}
	if _, ok := w.Watch("a/b/f"); !ok {
		t.Fatal("a/b/f not watched again past the bound")
	}
	before := w.Drain()
	if err := os.WriteFile(filepath.Join(dir, "a/b/f"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	if w.Drain() == before {
		t.Fatal("a change not counted past the bound")
	}
	w.Close()
	if first := w.Drain(); w.Drain() == first {
		t.Fatal("a closed watcher counts no change")
	}
}
