package expiry

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"log/slog"

	"largo"
	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/links"
)

// fixture is a folder served through a gate, with an access file whose
// [[expire]] tables are given, and a clock the test moves.
type fixture struct {
	dir    string
	store  *disk.Store
	writes *ingest.Pipeline
	links  *links.Links
	exp    *Expiry
	now    time.Time
	mu     sync.Mutex
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

func newFixture(t *testing.T, tables string) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), now: time.Now()}
	access := filepath.Join(t.TempDir(), "access.toml")
	text := "[[rule]]\npath = \"/\"\nusers = [\"*\"]\nallow = [\"all\"]\n" + tables
	if err := os.WriteFile(access, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := auth.LoadFile(access)
	if err != nil {
		t.Fatal(err)
	}
	if f.store, err = disk.Open(f.dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.store.Close() })
	ac := auth.New(pol, f.clock)
	state := f.store.State()
	f.links = links.New(links.Config{State: state, Key: []byte("0123456789abcdef0123456789abcdef"), Now: f.clock})
	g := gate.New(gate.Config{Access: ac, Links: f.links, Resolver: f.store})
	f.exp = New(Config{Access: ac, State: state, Gate: g, Now: f.clock})
	f.writes = ingest.New(ingest.Config{Store: g.Store(f.store), Landed: f.exp})
	return f
}

// put writes name through the pipeline as p.
func (f *fixture) put(t *testing.T, p gate.Principal, name, body string) largo.Info {
	t.Helper()
	ctx := gate.With(context.Background(), p)
	w, err := f.writes.Begin(ctx, ingest.Target{Name: name, Size: int64(len(body))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res.Info
}

func (f *fixture) exists(name string) bool {
	_, err := os.Stat(filepath.Join(f.dir, filepath.FromSlash(name)))
	return err == nil
}

func (f *fixture) sweep(t *testing.T) int {
	t.Helper()
	n, err := f.exp.Sweep(context.Background(), f.writes)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestSweepRules(t *testing.T) {
	f := newFixture(t, "[[expire]]\npath = \"/in\"\nafter = \"1h\"\n[[expire]]\npath = \"/in/keep\"\nafter = \"0\"\n")
	user := gate.User("")
	in := f.put(t, user, "in/a.txt", "a")
	f.put(t, user, "in/sub/b.txt", "b")
	f.put(t, user, "in/keep/c.txt", "c")
	f.put(t, user, "out/d.txt", "d")
	if at, ok := f.exp.Expires("in/a.txt", in); !ok || !at.Equal(in.ModTime.Add(time.Hour)) {
		t.Errorf("Expires(in/a.txt) = %v, %v; want its modification time plus an hour", at, ok)
	}
	if n := f.sweep(t); n != 0 {
		t.Fatalf("swept %d files before their time", n)
	}
	f.advance(time.Hour + time.Second)
	if n := f.sweep(t); n != 2 {
		t.Errorf("swept %d files; want in/a.txt and in/sub/b.txt", n)
	}
	for name, want := range map[string]bool{"in/a.txt": false, "in/sub/b.txt": false, "in/keep/c.txt": true, "out/d.txt": true} {
		if f.exists(name) != want {
			t.Errorf("%s exists %v; want %v", name, !want, want)
		}
	}
}

func TestSweepDropBox(t *testing.T) {
	f := newFixture(t, "")
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(f.dir, "drop"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, l, err := f.links.Make(ctx, links.Link{Kind: links.Drop, Path: "drop", Expires: f.now.Add(24 * time.Hour), FileTTL: 60}, "")
	if err != nil {
		t.Fatal(err)
	}
	holder := gate.LinkHolder(l.ID)
	kept := f.put(t, holder, "drop/a.bin", "a")
	f.put(t, holder, "drop/b.bin", "b")
	if at, ok := f.exp.Expires("drop/a.bin", kept); !ok || !at.Equal(kept.ModTime.Add(time.Minute)) {
		t.Errorf("Expires(drop/a.bin) = %v, %v; want a minute after it landed", at, ok)
	}
	// b is replaced by a user: its record held for the version that landed.
	time.Sleep(10 * time.Millisecond)
	nb := f.put(t, gate.User(""), "drop/b.bin", "bb")
	if _, ok := f.exp.Expires("drop/b.bin", nb); ok {
		t.Error("the replaced drop/b.bin still lists an expiry")
	}
	f.advance(2 * time.Minute)
	if n := f.sweep(t); n != 1 {
		t.Errorf("swept %d files; want drop/a.bin alone", n)
	}
	if f.exists("drop/a.bin") || !f.exists("drop/b.bin") {
		t.Errorf("after the sweep a.bin exists %v (want false), b.bin %v (want true)", f.exists("drop/a.bin"), f.exists("drop/b.bin"))
	}
	n := 0
	for _, err := range f.store.State().List(ctx, Prefix) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 0 {
		t.Errorf("%d expiry records left after the sweep", n)
	}
}

func TestSweepLeavesChangedFile(t *testing.T) {
	f := newFixture(t, "[[expire]]\npath = \"/in\"\nafter = \"1h\"\n")
	in := f.put(t, gate.User(""), "in/a.txt", "a")
	// The version that expired is no longer there when it is removed.
	in.ETag = `"another"`
	ok, err := f.exp.remove(gate.With(context.Background(), gate.Server()), f.writes, "in/a.txt", in, "rule", in.ModTime, slog.Attr{})
	if ok || err != nil || !f.exists("in/a.txt") {
		t.Errorf("remove of a changed file: %v, %v; exists %v; want it left", ok, err, f.exists("in/a.txt"))
	}
}

func TestRoots(t *testing.T) {
	got := roots([]auth.Expire{{Path: "a/b", After: 1}, {Path: "a", After: 1}, {Path: "c", After: 0}, {Path: "ab", After: 1}})
	want := []string{"a", "ab"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("roots = %q; want %q", got, want)
	}
}

// TestLandedBy: a whole-second stamp (a bucket's Last-Modified) counts
// as the end of its second, so nothing is removed before its time; a
// stamp with a fraction is kept as it is.
func TestLandedBy(t *testing.T) {
	whole := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := landedBy(whole); !got.After(whole.Add(999 * time.Millisecond)) {
		t.Errorf("landedBy(%v) = %v; want the end of that second", whole, got)
	}
	exact := whole.Add(123 * time.Millisecond)
	if got := landedBy(exact); !got.Equal(exact) {
		t.Errorf("landedBy(%v) = %v; want it unchanged", exact, got)
	}
	if got := landedBy(time.Time{}); !got.IsZero() {
		t.Errorf("landedBy(zero) = %v", got)
	}
}
