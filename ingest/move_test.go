package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"largo"
	"largo/disk"
	"largo/gate"
)

// noCopy is a folder that cannot copy inside itself, as a store whose
// copies go through the caller.
type noCopy struct{ *disk.Store }

func (noCopy) Copy() {} // hides disk.Store's Copy

// staleView answers Stat with an ETag the file no longer has: a file
// replaced between the look and the removal.
type staleView struct{ largo.Store }

func (v staleView) Stat(ctx context.Context, name string) (largo.Info, error) {
	in, err := v.Store.Stat(ctx, name)
	if err == nil && !in.IsDir {
		in.ETag = `"stale"`
	}
	return in, err
}

// lockAll is a Guard that holds a lock on everything.
type lockAll struct{}

func (lockAll) Locked(_ context.Context, name string, _ bool, tokens []string) error {
	if len(tokens) > 0 && tokens[0] == "key" {
		return nil
	}
	return fmt.Errorf("%s: %w", name, largo.ErrLocked)
}
func (lockAll) Forget(context.Context, string)          {}
func (lockAll) Renamed(context.Context, string, string) {}

// TestMoveByCopy moves a folder by copies and removals, with the store's
// own copy and streamed: everything the view shows arrives, hidden names
// stay, with the folder that holds them.
func TestMoveByCopy(t *testing.T) {
	files := map[string]string{"a/x": "x", "a/sub/y": "yy", "a/sub/deeper/z": "zzz", "a/keep/.hidden": "h"}
	for _, c := range []struct {
		name  string
		store func(*disk.Store) largo.Store
	}{
		{"store copies", func(s *disk.Store) largo.Store { return s }},
		{"streamed", func(s *disk.Store) largo.Store { return noCopy{s} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, dir := newStore(t, files)
			st := c.store(s)
			p := New(Config{Store: st})
			if err := p.MoveByCopy(context.Background(), st, "a", "b", nil); err != nil {
				t.Fatal(err)
			}
			for name, want := range map[string]string{"b/x": "x", "b/sub/y": "yy", "b/sub/deeper/z": "zzz", "a/keep/.hidden": "h"} {
				if got := read(t, dir, name); got != want {
					t.Errorf("%s: %q; want %q", name, got, want)
				}
			}
			for _, gone := range []string{"a/x", "a/sub", "b/keep/.hidden"} {
				if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
					t.Errorf("%s: %v; want it gone", gone, err)
				}
			}
		})
	}
}

// TestMoveByCopyLeavesLinks: through the gate, which tells what a link
// leads to, a move by copies moves no link and enters none: a link stays
// where it was, with its folder, and what it leads to moves as itself.
func TestMoveByCopyLeavesLinks(t *testing.T) {
	s, dir := newStore(t, map[string]string{"a/x": "x", "a/sub/y": "yy", "a/sub/deeper/z": "zzz"})
	os.Symlink("../x", filepath.Join(dir, "a", "sub", "ln"))
	os.Symlink("sub", filepath.Join(dir, "a", "dl"))
	_, gs := gate.Open(s)
	ctx := gate.With(context.Background(), gate.Server())
	p := New(Config{Store: gs})
	if err := p.MoveByCopy(ctx, gs, "a", "b", nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"b/x": "x", "b/sub/y": "yy", "b/sub/deeper/z": "zzz"} {
		if got := read(t, dir, name); got != want {
			t.Errorf("%s: %q; want %q", name, got, want)
		}
	}
	for _, link := range []string{"a/sub/ln", "a/dl"} {
		if fi, err := os.Lstat(filepath.Join(dir, link)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: %v; want the link where it was", link, err)
		}
	}
	for _, gone := range []string{"a/x", "a/sub/y", "a/sub/deeper", "b/dl", "b/sub/ln"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s: %v; want nothing there", gone, err)
		}
	}
}

// TestMoveByCopyKeepsChanged: a file that is not as it was looked at is
// copied but not removed; a locked name moves nothing without its token.
func TestMoveByCopyKeepsChanged(t *testing.T) {
	s, dir := newStore(t, map[string]string{"f": "new"})
	p := New(Config{Store: s})
	err := p.MoveByCopy(context.Background(), staleView{s}, "f", "g", nil)
	if !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("move of a changed file: %v; want a failed precondition", err)
	}
	if read(t, dir, "f") != "new" {
		t.Error("the changed file was removed")
	}

	s, dir = newStore(t, map[string]string{"d/f": "f"})
	p = New(Config{Store: s, Guard: lockAll{}})
	if err := p.MoveByCopy(context.Background(), s, "d", "e", nil); !errors.Is(err, largo.ErrLocked) {
		t.Errorf("move of a locked folder: %v; want largo.ErrLocked", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "e")); !os.IsNotExist(err) || read(t, dir, "d/f") != "f" {
		t.Error("a locked folder moved")
	}
	if err := p.MoveByCopy(context.Background(), s, "d", "e", []string{"key"}); err != nil {
		t.Errorf("move with the lock's token: %v", err)
	}
}
