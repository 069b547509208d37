package digests_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"largo"
	"largo/digests"
	"largo/disk"
)

// folder returns a real folder store holding files.
func folder(t *testing.T, files map[string]string) (*disk.Store, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		write(t, dir, name, body)
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sum(s string) []byte { b := sha256.Sum256([]byte(s)); return b[:] }

func stat(t *testing.T, st largo.Store, name string) largo.Info {
	t.Helper()
	in, err := st.Stat(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestRecordAndLookup(t *testing.T) {
	ctx := context.Background()
	st, dir := folder(t, map[string]string{"a/f.bin": "one"})
	now := time.Unix(1000, 0)
	k := digests.New(st.State(), digests.Options{Store: st, Now: func() time.Time { return now }, NegativeTTL: time.Minute})
	in := stat(t, st, "a/f.bin")

	if got, err := k.Lookup(ctx, "a/f.bin", in.ETag); got != nil || err != nil {
		t.Fatalf("before any record: %x, %v", got, err)
	}
	// Written by another process: the negative answer holds for its time.
	if err := digests.Put(ctx, st.State(), "a/f.bin", in.ETag, sum("one")); err != nil {
		t.Fatal(err)
	}
	if got, _ := k.Lookup(ctx, "a/f.bin", in.ETag); got != nil {
		t.Fatal("a negative answer was not kept for its time to live")
	}
	now = now.Add(2 * time.Minute)
	if got, err := k.Lookup(ctx, "a/f.bin", in.ETag); !bytes.Equal(got, sum("one")) || err != nil {
		t.Fatalf("recorded: %x, %v", got, err)
	}
	// Recorded by this keeper: served at once, whatever was cached.
	write(t, dir, "a/g.bin", "two")
	g := stat(t, st, "a/g.bin")
	k.Lookup(ctx, "a/g.bin", g.ETag)
	k.Record(ctx, "a/g.bin", g, sum("two"))
	if got, _ := k.Lookup(ctx, "a/g.bin", g.ETag); !bytes.Equal(got, sum("two")) {
		t.Fatalf("a record made here was not served at once: %x", got)
	}
	// Replaced out of band: the old digest is never served.
	write(t, dir, "a/f.bin", "other content")
	changed := stat(t, st, "a/f.bin")
	if changed.ETag == in.ETag {
		t.Fatal("the folder gave a rewritten file the same ETag")
	}
	if got, _ := k.Lookup(ctx, "a/f.bin", changed.ETag); got != nil {
		t.Fatalf("a changed file's old digest was served: %x", got)
	}
	if got, _ := k.Peek(ctx, "a/f.bin", changed.ETag); got != nil {
		t.Fatalf("a changed file's old digest was peeked: %x", got)
	}
	// Another name with the same ETag has none.
	if got, _ := k.Lookup(ctx, "b/f.bin", in.ETag); got != nil {
		t.Error("a record answered for another name")
	}
	if got := k.Recorded(ctx, "a/g.bin", g.ETag); !bytes.Equal(got, sum("two")) {
		t.Errorf("Recorded: %x", got)
	}
}

func TestPutRefuses(t *testing.T) {
	st, _ := folder(t, nil)
	ctx := context.Background()
	if err := digests.Put(ctx, st.State(), "x", "", sum("x")); err == nil {
		t.Error("a record without an ETag was written")
	}
	if err := digests.Put(ctx, st.State(), "x", `"e"`, []byte{1, 2}); err == nil {
		t.Error("a record of a short digest was written")
	}
	if err := st.State().Put(ctx, digests.Key("x"), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := digests.Get(ctx, st.State(), "x"); err == nil || errors.Is(err, largo.ErrNotFound) {
		t.Errorf("a damaged record: %v", err)
	}
	k := digests.New(st.State(), digests.Options{})
	if got, err := k.Lookup(ctx, "x", `"e"`); got != nil || err == nil {
		t.Errorf("Lookup of a damaged record: %x, %v", got, err)
	}
}

func TestNoState(t *testing.T) {
	var nilKeeper *digests.Keeper
	for _, k := range []*digests.Keeper{nilKeeper, digests.New(nil, digests.Options{})} {
		ctx := context.Background()
		k.Record(ctx, "a", largo.Info{ETag: `"e"`}, sum("a"))
		if got, err := k.Lookup(ctx, "a", `"e"`); got != nil || err != nil {
			t.Errorf("without a state area: %x, %v", got, err)
		}
		k.Forget(ctx, "a")
		k.Renamed(ctx, "a", "b")
		if _, err := k.Hash(ctx, "", digests.HashOptions{}); !errors.Is(err, largo.ErrUnsupported) {
			t.Errorf("Hash without a state area: %v", err)
		}
	}
}

func TestForget(t *testing.T) {
	ctx := context.Background()
	st, dir := folder(t, map[string]string{"f": "f", "g": "g"})
	k := digests.New(st.State(), digests.Options{Store: st})
	f, g := stat(t, st, "f"), stat(t, st, "g")
	k.Record(ctx, "f", f, sum("f"))
	k.Record(ctx, "g", g, sum("g"))
	// g is still there as recorded (a write committed again after the
	// removal): its record stays.
	k.Forget(ctx, "g")
	if _, err := digests.Get(ctx, st.State(), "g"); err != nil {
		t.Errorf("the record of a file still there went: %v", err)
	}
	os.Remove(filepath.Join(dir, "f"))
	k.Forget(ctx, "f")
	if _, err := digests.Get(ctx, st.State(), "f"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("the record of a removed file stayed: %v", err)
	}
}

func TestRenamed(t *testing.T) {
	ctx := context.Background()
	st, dir := folder(t, map[string]string{"f": "f", "d/x": "x", "d/sub/y": "y", "old": "old"})
	k := digests.New(st.State(), digests.Options{Store: st})
	for _, n := range []string{"f", "d/x", "d/sub/y", "old"} {
		in := stat(t, st, n)
		k.Record(ctx, n, in, sum(n))
	}
	// A file renamed over another: the record follows, the replaced
	// file's goes.
	if err := st.Rename(ctx, "f", "old"); err != nil {
		t.Fatal(err)
	}
	k.Renamed(ctx, "f", "old")
	in := stat(t, st, "old")
	if got, _ := k.Lookup(ctx, "old", in.ETag); !bytes.Equal(got, sum("f")) {
		t.Errorf("after a rename over another file: %x", got)
	}
	if _, err := digests.Get(ctx, st.State(), "f"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("the old name's record stayed: %v", err)
	}
	// A folder: every file below it.
	if err := st.Rename(ctx, "d", "e"); err != nil {
		t.Fatal(err)
	}
	k.Renamed(ctx, "d", "e")
	for old, now := range map[string]string{"d/x": "e/x", "d/sub/y": "e/sub/y"} {
		in := stat(t, st, now)
		if got, _ := k.Lookup(ctx, now, in.ETag); !bytes.Equal(got, sum(old)) {
			t.Errorf("%s moved to %s: %x", old, now, got)
		}
		if _, err := digests.Get(ctx, st.State(), old); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("%s: the old record stayed: %v", old, err)
		}
	}
	// A file whose version changed on the way loses its digest.
	k.Record(ctx, "e/x", stat(t, st, "e/x"), sum("d/x"))
	if err := st.Rename(ctx, "e/x", "z"); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "z", "rewritten")
	k.Renamed(ctx, "e/x", "z")
	if got, _ := k.Lookup(ctx, "z", stat(t, st, "z").ETag); got != nil {
		t.Errorf("a digest followed a file that changed: %x", got)
	}
}

func TestHash(t *testing.T) {
	ctx := context.Background()
	st, dir := folder(t, map[string]string{"a": "aaa", "d/b": "bbbb", "d/e/c": ""})
	k := digests.New(st.State(), digests.Options{Store: st})
	var events []digests.Event
	s, err := k.Hash(ctx, "", digests.HashOptions{Event: func(ev digests.Event) { events = append(events, ev) }})
	if err != nil || s.Hashed != 3 || s.Fresh != 0 || s.Failed != 0 || s.Bytes != 7 || len(events) != 3 {
		t.Fatalf("first pass: %+v, %v, %d events", s, err, len(events))
	}
	for n, body := range map[string]string{"a": "aaa", "d/b": "bbbb", "d/e/c": ""} {
		if got, _ := k.Lookup(ctx, n, stat(t, st, n).ETag); !bytes.Equal(got, sum(body)) {
			t.Errorf("%s: %x", n, got)
		}
	}
	// Again: nothing read. One changed: only it.
	write(t, dir, "d/b", "changed")
	s, err = k.Hash(ctx, "d", digests.HashOptions{})
	if err != nil || s.Hashed != 1 || s.Fresh != 1 || s.Bytes != 7 {
		t.Fatalf("second pass: %+v, %v", s, err)
	}
	if got, _ := k.Lookup(ctx, "d/b", stat(t, st, "d/b").ETag); !bytes.Equal(got, sum("changed")) {
		t.Errorf("the changed file: %x", got)
	}
	// One file by name, forced, within a rate.
	s, err = k.Hash(ctx, "a", digests.HashOptions{Force: true, Rate: 1 << 20})
	if err != nil || s.Hashed != 1 || s.Bytes != 3 {
		t.Fatalf("one file: %+v, %v", s, err)
	}
	if _, err := k.Hash(ctx, "missing", digests.HashOptions{}); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("a missing name: %v", err)
	}
}

// TestHashRate reads a file under a cap and checks the cap held: the
// limiter's clock is real, so the file is small and the cap low.
func TestHashRate(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a second")
	}
	ctx := context.Background()
	st, _ := folder(t, map[string]string{"f": string(make([]byte, 192<<10))})
	k := digests.New(st.State(), digests.Options{Store: st})
	start := time.Now()
	if _, err := k.Hash(ctx, "f", digests.HashOptions{Rate: 128 << 10}); err != nil {
		t.Fatal(err)
	}
	// 64 KiB of burst, then 128 KiB at 128 KiB/s.
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("192 KiB at 128 KiB/s took %v", took)
	}
}

// TestCacheBounded asks for many names through a small cache and checks
// that answers stay right: an evicted one is read again.
func TestCacheBounded(t *testing.T) {
	ctx := context.Background()
	st, _ := folder(t, nil)
	k := digests.New(st.State(), digests.Options{CacheSize: 2})
	names := []string{"a", "b", "c", "d"}
	for i, n := range names {
		if i%2 == 0 {
			k.Record(ctx, n, largo.Info{ETag: `"e"`}, sum(n))
		}
	}
	for range 3 {
		for i, n := range names {
			got, err := k.Lookup(ctx, n, `"e"`)
			if (got != nil) != (i%2 == 0) || err != nil || got != nil && !bytes.Equal(got, sum(n)) {
				t.Errorf("%s: %x, %v", n, got, err)
			}
		}
	}
	if n := k.Len(); n > 2 {
		t.Errorf("%d answers kept; want at most 2", n)
	}
}
