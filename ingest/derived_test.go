package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"largo"
	"largo/disk"
)

// gzDerived is a Derived for which NAME.gz is derived from NAME: it
// records the changes it is told of, and names NAME.gz after each (with
// the ETag it has, or a wrong one when told to).
type gzDerived struct {
	st    largo.Store
	wrong string // a name whose ETag is misreported, as one replaced since

	mu      sync.Mutex
	changes []Change
	removed []string
	failed  []string
}

func (d *gzDerived) Follow(ctx context.Context, ch Change) []Stale {
	d.mu.Lock()
	d.changes = append(d.changes, ch)
	d.mu.Unlock()
	side := ch.Name + ".gz"
	in, err := d.st.Stat(ctx, side)
	if err != nil {
		return nil
	}
	if side == d.wrong {
		in.ETag = `"replaced"`
	}
	return []Stale{{Name: side, ETag: in.ETag}}
}

func (d *gzDerived) Removed(_ context.Context, name string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.failed = append(d.failed, name)
		return
	}
	d.removed = append(d.removed, name)
}

func (*gzDerived) Housekeeping(ctx context.Context) context.Context { return ctx }

// told returns the changes told since the last call, as "name was->now"
// with each version's name or "-", and forgets them.
func (d *gzDerived) told() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, ch := range d.changes {
		v := func(in largo.Info) string {
			if in == (largo.Info{}) {
				return "-"
			}
			return in.Name
		}
		out = append(out, fmt.Sprintf("%s %s->%s", ch.Name, v(ch.Was), v(ch.Now)))
	}
	d.changes = nil
	return out
}

// TestDerivedFollow: every change the pipeline is told of or makes (a
// write that replaces or creates, a placed upload, a removal, an
// expiry, a rename, a move by copies) is told to Derived with the
// versions before and after, and what it names is removed under its
// ETag, its digest forgotten; one replaced since stays.
func TestDerivedFollow(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{".largo/tus/up": "staged", "h/x.txt": "x", "h/x.txt.gz": "x compressed", "i/y.txt": "y"}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		files[n+".txt"], files[n+".txt.gz"] = n, n+" compressed"
	}
	s, dir := newStore(t, files)
	k := recordsOf(s)
	d := &gzDerived{st: s, wrong: "g.txt.gz"}
	p := New(Config{Store: noCopy{s}, Derived: d, Files: k})
	gone := func(name string) bool {
		_, err := os.Stat(filepath.Join(dir, name))
		return os.IsNotExist(err)
	}
	want := func(step string, told ...string) {
		t.Helper()
		if got := d.told(); !slices.Equal(got, told) {
			t.Errorf("%s: told %q; want %q", step, got, told)
		}
	}
	put := func(name, body string) {
		t.Helper()
		w, err := p.Begin(ctx, Target{Name: name, Size: int64(len(body))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.ReadFrom(strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The sidecar's own digest, to see it forgotten with it.
	put("a.txt.gz", "a compressed")
	d.told()

	put("a.txt", "new a")
	want("a replaced", "a.txt a.txt->a.txt")
	put("new.txt", "new")
	want("created", "new.txt -->new.txt")
	if !gone("a.txt.gz") {
		t.Error("a.txt.gz outlived the version of a.txt it was derived from")
	}
	if _, err := k.Get(ctx, "a.txt.gz"); !errors.Is(err, largo.ErrNotFound) {
		t.Error("the removed a.txt.gz kept its digest")
	}

	in, _ := s.Stat(ctx, "b.txt")
	if err := s.Remove(ctx, "b.txt", largo.RemoveOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Removed(ctx, "b.txt", in)
	want("removed", "b.txt b.txt->-")
	in, _ = s.Stat(ctx, "c.txt")
	s.Remove(ctx, "c.txt", largo.RemoveOptions{})
	p.Expired(ctx, "c.txt", in)
	want("expired", "c.txt c.txt->-")

	if err := s.Rename(ctx, "d.txt", "d2.txt"); err != nil {
		t.Fatal(err)
	}
	p.Renamed(ctx, "d.txt", "d2.txt")
	want("renamed", "d2.txt -->d2.txt", "d.txt d.txt->-")
	if err := p.MoveByCopy(ctx, noCopy{s}, "e.txt", "e2.txt", nil); err != nil {
		t.Fatal(err)
	}
	want("moved by copies", "e2.txt -->e2.txt", "e.txt e.txt->-")
	if err := s.Rename(ctx, "h", "h2"); err != nil {
		t.Fatal(err)
	}
	p.Renamed(ctx, "h", "h2")
	want("a folder renamed") // its derived files moved with it, their records too
	if err := p.MoveByCopy(ctx, noCopy{s}, "i", "i2", nil); err != nil {
		t.Fatal(err)
	}
	want("a folder moved by copies", "i2/y.txt -->y.txt")
	if gone("h2/x.txt.gz") {
		t.Error("a folder's rename took a file's derived file from it")
	}

	staged := Staged{Name: ".largo/tus/up", Size: 6, Open: func(context.Context) (io.ReadCloser, error) {
		return os.Open(filepath.Join(dir, ".largo", "tus", "up"))
	}}
	if _, err := p.Place(ctx, Target{Name: "f.txt"}, staged); err != nil {
		t.Fatal(err)
	}
	want("placed", "f.txt f.txt->f.txt")

	put("g.txt", "new g")
	want("g replaced", "g.txt g.txt->g.txt")
	for _, n := range []string{"b.txt.gz", "c.txt.gz", "d.txt.gz", "e.txt.gz", "f.txt.gz"} {
		if !gone(n) {
			t.Errorf("%s outlived its file", n)
		}
	}
	if gone("g.txt.gz") || !slices.Equal(d.failed, []string{"g.txt.gz"}) {
		t.Errorf("g.txt.gz, replaced since it was judged, was removed; failures told: %v", d.failed)
	}
}

// landRefused is a store that takes back every file committed to
// refused.
type landRefused struct{ *disk.Store }

func (s landRefused) Landed(ctx context.Context, name string, in largo.Info) error {
	if name != "refused" {
		return nil
	}
	s.Remove(ctx, name, largo.RemoveOptions{Condition: largo.Condition{IfMatch: in.ETag}})
	return fmt.Errorf("%s: %w", name, largo.ErrSidecarName)
}

// TestLandedRefused: a file the store takes back once committed fails
// its write, and is told to no one.
func TestLandedRefused(t *testing.T) {
	s, dir := newStore(t, nil)
	k := recordsOf(s)
	d := &gzDerived{st: s}
	p := New(Config{Store: landRefused{s}, Derived: d, Files: k})
	ctx := context.Background()
	w, err := p.Begin(ctx, Target{Name: "refused", Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	w.ReadFrom(strings.NewReader("abc"))
	if _, err := w.Commit(ctx); !errors.Is(err, largo.ErrSidecarName) {
		t.Errorf("commit of a file taken back: %v", err)
	}
	if read(t, dir, "refused") == "abc" {
		t.Error("the file taken back is there")
	}
	if told := d.told(); len(told) != 0 {
		t.Errorf("a file taken back was told: %v", told)
	}
}
