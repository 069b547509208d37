package links

import (
	"context"
	"errors"
	"testing"
	"time"

	"largo"
)

// TestSweep: the records of links expired longer than the grace go with
// their download counts; links expired within it, and live ones, stay
// with theirs; the counts of links revoked or removed go; records of no
// link's form are left alone.
func TestSweep(t *testing.T) {
	onEachState(t, func(t *testing.T, state largo.State) {
		c := newClock()
		ctx := context.Background()
		const grace = 24 * time.Hour
		ls := New(Config{State: state, Now: c.now, Grace: grace})
		make := func(expires time.Duration, downloads bool) *Link {
			t.Helper()
			_, l, err := ls.Make(ctx, Link{Kind: File, Path: "f", Expires: c.now().Add(expires), MaxDownloads: 5}, "")
			if err != nil {
				t.Fatal(err)
			}
			if downloads {
				done, err := ls.Begin(ctx, &l, 10, 10)
				if err != nil {
					t.Fatal(err)
				}
				if err := done(ctx, 10, true); err != nil {
					t.Fatal(err)
				}
			}
			return &l
		}
		old := make(time.Hour, true)         // expired 2 days ago, when the sweep runs
		oldBare := make(time.Hour, false)    // the same, never downloaded
		recent := make(40*time.Hour, true)   // expired 8 hours before the sweep
		live := make(30*24*time.Hour, true)  // not expired
		gone := make(30*24*time.Hour, true)  // its record removed by hand
		other := make(30*24*time.Hour, true) // revoked
		if err := state.Delete(ctx, linkPrefix+gone.ID); err != nil {
			t.Fatal(err)
		}
		if err := ls.Revoke(ctx, other.ID, "", true); err != nil {
			t.Fatal(err)
		}
		if _, err := state.Get(ctx, downloadPrefix+other.ID); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("a revoked link's count stays: %v", err)
		}
		if err := state.Put(ctx, "links/not-an-id", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		c.add(48 * time.Hour)
		n, err := ls.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != 4 { // old, oldBare, old's count, gone's count
			t.Errorf("Sweep removed %d records; want 4", n)
		}
		has := func(key string) bool {
			_, err := state.Get(ctx, key)
			if err != nil && !errors.Is(err, largo.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		for key, want := range map[string]bool{
			linkPrefix + old.ID: false, downloadPrefix + old.ID: false,
			linkPrefix + oldBare.ID: false,
			linkPrefix + recent.ID:  true, downloadPrefix + recent.ID: true,
			linkPrefix + live.ID: true, downloadPrefix + live.ID: true,
			downloadPrefix + gone.ID: false,
			"links/not-an-id":        true,
		} {
			if got := has(key); got != want {
				t.Errorf("%s kept: %v; want %v", key, got, want)
			}
		}
		if _, err := ls.Get(ctx, old.ID); !errors.Is(err, ErrRevoked) {
			t.Errorf("a swept link: %v; want ErrRevoked", err)
		}
		if n, err := ls.Sweep(ctx); n != 0 || err != nil {
			t.Errorf("a second sweep: %d, %v; want nothing to do", n, err)
		}
	})
}
