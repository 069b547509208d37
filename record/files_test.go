package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
)

// oldRecords writes the records an earlier release kept of one file, in
// its layout: a record per kind, each under its prefix.
func oldRecords(t *testing.T, st largo.State, name, etag string) {
	t.Helper()
	ctx := context.Background()
	put := func(prefix string, v any) {
		b, _ := json.Marshal(v)
		if err := st.Put(ctx, prefix+NameKey(name), b); err != nil {
			t.Fatal(err)
		}
	}
	put("digests/", map[string]any{"name": name, "etag": etag, "sha256": strings.Repeat("ab", 32)})
	put("quota/owners/", map[string]any{"name": name, "user": "alice", "size": 42, "etag": etag})
	put("sidecars/", map[string]any{"name": name, "etag": etag, "source": `"src"`})
	put("expiry/", map[string]any{"name": name, "etag": etag, "landed": time.Unix(1e9, 0).UTC(), "expires": time.Unix(2e9, 0).UTC(), "link": "L1"})
}

func TestFilesMigrate(t *testing.T) {
	states(t, func(t *testing.T, st largo.State) {
		ctx := context.Background()
		oldRecords(t, st, "a/one.txt", `"v1"`)
		oldRecords(t, st, "b/two.txt", `"v2"`)
		f := NewFiles(New(st, Options{}), FilesOptions{})
		// Asked for before the pass: read from the old layout on the way.
		rec, err := f.Get(ctx, "a/one.txt")
		if err != nil {
			t.Fatal(err)
		}
		want := File{Name: "a/one.txt", ETag: `"v1"`, Size: 42, SHA256: rec.SHA256, Owner: "alice", Link: "L1", Expires: time.Unix(2e9, 0).UTC(), Source: `"src"`}
		if !reflect.DeepEqual(rec, want) || len(rec.Sum()) != 32 {
			t.Errorf("migrated on the way: %+v; want %+v", rec, want)
		}
		n, err := f.Migrate(ctx, nil)
		if err != nil || n != 1 {
			t.Errorf("Migrate = %d, %v; want the one file left", n, err)
		}
		// Every old record of a file went, but the expiry index.
		for _, p := range []string{"digests/", "quota/owners/", "sidecars/"} {
			for _, name := range []string{"a/one.txt", "b/two.txt"} {
				if _, err := st.Get(ctx, p+NameKey(name)); !errors.Is(err, largo.ErrNotFound) {
					t.Errorf("%s of %s still there: %v", p, name, err)
				}
			}
		}
		if _, err := st.Get(ctx, "expiry/"+NameKey("b/two.txt")); err != nil {
			t.Errorf("the expiry index went: %v", err)
		}
		// A new instance reads the new layout alone: the pass is not made again.
		g := NewFiles(New(st, Options{}), FilesOptions{})
		if n, err := g.Migrate(ctx, nil); n != 0 || err != nil {
			t.Errorf("a second Migrate = %d, %v", n, err)
		}
		if rec, err := g.Of(ctx, "b/two.txt", `"v2"`); err != nil || rec.Owner != "alice" || rec.Sum() == nil {
			t.Errorf("after the pass: %+v, %v", rec, err)
		}
		if _, err := g.Of(ctx, "b/two.txt", `"v3"`); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("Of another version: %v", err)
		}
		if _, err := g.Get(ctx, "c/none"); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("Get of a file with no record: %v", err)
		}
	})
}

func TestFilesMove(t *testing.T) {
	states(t, func(t *testing.T, st largo.State) {
		ctx := context.Background()
		f := NewFiles(New(st, Options{}), FilesOptions{})
		f.Migrate(ctx, nil)
		rec := File{Name: "from", ETag: `"e"`, Size: 7, SHA256: "ab", Owner: "bob"}
		if err := f.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if err := f.Move(ctx, "from", "to", largo.Info{ETag: `"e"`, Size: 7}); err != nil {
			t.Fatal(err)
		}
		if got, err := f.Get(ctx, "to"); err != nil || got.SHA256 != "ab" || got.Owner != "bob" {
			t.Errorf("moved, same version: %+v, %v", got, err)
		}
		if _, err := f.Get(ctx, "from"); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("the old name's record: %v", err)
		}
		// A move that changed the version keeps only its owner.
		if err := f.Move(ctx, "to", "again", largo.Info{ETag: `"other"`, Size: 9}); err != nil {
			t.Fatal(err)
		}
		if got, _ := f.Get(ctx, "again"); got.SHA256 != "" || got.Owner != "bob" || got.ETag != `"other"` || got.Size != 9 {
			t.Errorf("moved to another version: %+v", got)
		}
	})
}

// gets counts the reads of a state by key prefix.
type gets struct {
	largo.State
	mu sync.Mutex
	n  map[string]int
}

func (g *gets) Get(ctx context.Context, key string) ([]byte, error) {
	g.mu.Lock()
	g.n[key[:strings.IndexByte(key, '/')+1]]++
	g.mu.Unlock()
	return g.State.Get(ctx, key)
}

// TestFilesNoOldLayout: a store that never had the old layout (a new
// one) has nothing to migrate on the way: files without a record cost
// no read of the old prefixes, before any Migrate pass, while a store
// that has old records still reads them on the way.
func TestFilesNoOldLayout(t *testing.T) {
	states(t, func(t *testing.T, st largo.State) {
		ctx := context.Background()
		g := &gets{State: st, n: map[string]int{}}
		f := NewFiles(New(g, Options{}), FilesOptions{})
		for i := range 20 {
			if _, err := f.Get(ctx, fmt.Sprintf("none/%d", i)); !errors.Is(err, largo.ErrNotFound) {
				t.Fatalf("Get of a file with no record: %v", err)
			}
		}
		for _, p := range []string{"digests/", "quota/", "sidecars/", "expiry/"} {
			if g.n[p] > 0 {
				t.Errorf("%d reads under %s on a store without the old layout", g.n[p], p)
			}
		}
		oldRecords(t, st, "a/one.txt", `"v1"`)
		h := NewFiles(New(st, Options{}), FilesOptions{})
		if rec, err := h.Get(ctx, "a/one.txt"); err != nil || rec.Owner != "alice" {
			t.Errorf("on a store with the old layout: %+v, %v", rec, err)
		}
	})
}
