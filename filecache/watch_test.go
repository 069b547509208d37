//go:build linux

package filecache

import (
	"os"
	"path/filepath"
	"testing"

	"largo/disk"
)

// watchedFixture is a fixture whose cache has a Watcher of its folder,
// with no window: a file not watched is looked at before every answer.
func watchedFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	fx := newFixture(t, Options{}, files)
	w, err := fx.inner.Store.(*disk.Store).NewWatcher(100)
	if err != nil {
		t.Skip("no inotify here:", err)
	}
	t.Cleanup(func() { w.Close() })
	fx.s.opt.Watch = w
	return fx
}

// A file kept in watched folders is served with no stat, and a change
// made behind the cache, of any kind, is served at once.
func TestWatchedServedNewAtOnce(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, fx *fixture)
		want   string // "" for gone
	}{
		{"replaced by a rename", func(t *testing.T, fx *fixture) { fx.replace(t, "d/e/f", "new") }, "new"},
		{"written in place", func(t *testing.T, fx *fixture) {
			if err := os.WriteFile(filepath.Join(fx.dir, "d/e/f"), []byte("new"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "new"},
		{"its folder swapped", func(t *testing.T, fx *fixture) {
			if err := os.Rename(filepath.Join(fx.dir, "d"), filepath.Join(fx.dir, "old")); err != nil {
				t.Fatal(err)
			}
			fx.replace(t, "d/e/f", "new")
		}, "new"},
		{"a folder above swapped for a link", func(t *testing.T, fx *fixture) {
			if err := os.Rename(filepath.Join(fx.dir, "d"), filepath.Join(fx.dir, "old")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("old", filepath.Join(fx.dir, "d")); err != nil {
				t.Fatal(err)
			}
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fx := watchedFixture(t, map[string]string{"d/e/f": "old"})
			fx.keep(t, "d/e/f")
			stats := fx.inner.stats.Load()
			for range 3 {
				if got, kept := fx.read(t, "d/e/f"); got != "old" || !kept {
					t.Fatalf("read %q, kept %v", got, kept)
				}
			}
			if n := fx.inner.stats.Load() - stats; n != 0 {
				t.Fatalf("%d stats for 3 reads of a watched file; want none", n)
			}
			tt.change(t, fx)
			if tt.want == "" {
				if f, err := fx.s.Open(t.Context(), "d/e/f"); err == nil {
					f.Close()
					t.Fatal("served through a link after the change; want it refused")
				}
				return
			}
			if got, _ := fx.read(t, "d/e/f"); got != tt.want {
				t.Fatalf("read %q after the change; want %q", got, tt.want)
			}
		})
	}
}

// A file of two names is looked at before each answer all the same: a
// change through the other name, in a folder not watched, raises no
// notice in its own.
func TestWatchedHardLinkLookedAt(t *testing.T) {
	fx := watchedFixture(t, map[string]string{"d/f": "old", "other/x": ""})
	if err := os.Link(filepath.Join(fx.dir, "d/f"), filepath.Join(fx.dir, "other/f")); err != nil {
		t.Fatal(err)
	}
	fx.keep(t, "d/f")
	f, err := os.OpenFile(filepath.Join(fx.dir, "other/f"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("+more")
	f.Close()
	if got, _ := fx.read(t, "d/f"); got != "old+more" {
		t.Fatalf("read %q after a change through the other name", got)
	}
}

// A file given a second name after it was kept, in a folder not
// watched, is told to none of its folders: it is found so at its next
// look, at most MemoLife later, and looked at before each answer from
// then on.
func TestWatchedHardLinkMadeLater(t *testing.T) {
	fx := watchedFixture(t, map[string]string{"d/f": "old", "other/x": ""})
	fx.keep(t, "d/f")
	if err := os.Link(filepath.Join(fx.dir, "d/f"), filepath.Join(fx.dir, "other/f")); err != nil {
		t.Fatal(err)
	}
	fx.clock.advance(MemoLife)
	if got, _ := fx.read(t, "d/f"); got != "old" {
		t.Fatalf("read %q", got)
	}
	f, err := os.OpenFile(filepath.Join(fx.dir, "other/f"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("+more")
	f.Close()
	if got, _ := fx.read(t, "d/f"); got != "old+more" {
		t.Fatalf("read %q after a change through the name made later", got)
	}
}

// What is derived from a watched file's version is derived again after
// MemoLife, with no change told, at the look it is due then (one stat):
// a digest recorded behind the answer shows.
func TestWatchedMemoRenewed(t *testing.T) {
	fx := watchedFixture(t, map[string]string{"f": "x"})
	fx.keep(t, "f")
	fx.memo(t, "f").Store("derived")
	stats := fx.inner.stats.Load()
	if v := fx.memo(t, "f").Load(); v != "derived" {
		t.Fatalf("memo = %v at once; want it kept", v)
	}
	fx.clock.advance(MemoLife)
	if v := fx.memo(t, "f").Load(); v != nil {
		t.Fatalf("memo = %v after MemoLife; want it derived again", v)
	}
	if n := fx.inner.stats.Load() - stats; n != 1 {
		t.Fatalf("%d stats; want the one look", n)
	}
}
