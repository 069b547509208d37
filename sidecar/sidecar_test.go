package sidecar_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"largo"
	"largo/disk"
	"largo/sidecar"
)

// state returns the state area of a real folder store.
func state(t *testing.T) largo.State {
	t.Helper()
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st.State()
}

func TestRecorded(t *testing.T) {
	ctx := context.Background()
	st := state(t)
	now := time.Unix(1000, 0)
	c := sidecar.NewChecker(st, sidecar.Options{Now: func() time.Time { return now }, NegativeTTL: time.Minute})
	gz := largo.Info{Name: "data.csv.gz", Size: 10, ETag: `"gz-1"`}

	// Nothing recorded: a file of its own, and the answer is kept.
	if ok, err := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-1"`); ok || err != nil {
		t.Fatalf("unrecorded: %v, %v", ok, err)
	}
	if err := sidecar.Put(ctx, st, "dir/data.csv.gz", gz, `"csv-1"`); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-1"`); ok {
		t.Fatal("a negative answer was not kept for its time to live")
	}
	now = now.Add(2 * time.Minute)
	if ok, err := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-1"`); !ok || err != nil {
		t.Fatalf("recorded: %v, %v", ok, err)
	}
	// The original changed: no longer its encoding, but still largo's.
	if ok, _ := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-2"`); ok {
		t.Error("a sidecar of an older original was taken")
	}
	if rec, ours, err := c.Of(ctx, "dir/data.csv.gz", gz); !ours || err != nil || rec.Source != `"csv-1"` {
		t.Errorf("Of a stale sidecar: %+v, %v, %v", rec, ours, err)
	}
	// The sidecar was replaced: a file of its own.
	replaced := gz
	replaced.ETag = `"gz-2"`
	if ok, _ := c.Recorded(ctx, "dir/data.csv.gz", replaced, `"csv-1"`); ok {
		t.Error("a replaced sidecar was taken")
	}
	if _, ours, _ := c.Of(ctx, "dir/data.csv.gz", replaced); ours {
		t.Error("a replaced sidecar is still largo's")
	}
	// Another name with the same ETags has no record.
	if ok, _ := c.Recorded(ctx, "other/data.csv.gz", gz, `"csv-1"`); ok {
		t.Error("a record answered for another name")
	}
	if err := sidecar.Delete(ctx, st, "dir/data.csv.gz"); err != nil {
		t.Fatal(err)
	}
	if _, err := sidecar.Get(ctx, st, "dir/data.csv.gz"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("after Delete: %v", err)
	}
	c.Forget("dir/data.csv.gz")
	if ok, _ := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-1"`); ok {
		t.Error("a forgotten, removed record still answered")
	}
	if err := sidecar.Put(ctx, st, "x.gz", largo.Info{}, `"csv-1"`); err == nil {
		t.Error("a record without an ETag was written")
	}
}

func TestNoState(t *testing.T) {
	c := sidecar.NewChecker(nil, sidecar.Options{})
	if ok, err := c.Recorded(context.Background(), "a.gz", largo.Info{ETag: `"x"`}, `"y"`); ok || err != nil {
		t.Fatalf("without a state area: %v, %v", ok, err)
	}
}

// TestCacheBounded asks for many names through a small cache and checks
// that answers stay right: an evicted one is read again.
func TestCacheBounded(t *testing.T) {
	ctx := context.Background()
	st := state(t)
	c := sidecar.NewChecker(st, sidecar.Options{CacheSize: 2})
	in := largo.Info{ETag: `"s"`}
	for i, name := range []string{"a.gz", "b.gz", "c.gz", "d.gz"} {
		if i%2 == 0 {
			if err := sidecar.Put(ctx, st, name, in, `"o"`); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		for i, name := range []string{"a.gz", "b.gz", "c.gz", "d.gz"} {
			if ok, err := c.Recorded(ctx, name, in, `"o"`); ok != (i%2 == 0) || err != nil {
				t.Errorf("%s: %v, %v", name, ok, err)
			}
		}
	}
	if n := c.Len(); n > 2 {
		t.Errorf("%d answers kept; want at most 2", n)
	}
}
