package links

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"largo"
)

func TestDownloadsCount(t *testing.T) {
	d := New(Config{State: diskState(t)})
	ctx := context.Background()
	l := &Link{ID: "AAAAAAAAAAAAAAAAAAAAAA", Kind: File, MaxDownloads: 2, Expires: time.Now().Add(time.Hour)}
	const size = 1000
	send := func(want, sent int64) error {
		done, err := d.Begin(ctx, l, size, want)
		if err != nil {
			return err
		}
		return done(ctx, sent, sent == want)
	}
	used := func() Count {
		c, err := d.Downloads(ctx, l.ID)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A download cut at 400 bytes, then resumed: one.
	if err := send(size, 400); err != nil {
		t.Fatal(err)
	}
	if err := send(600, 600); err != nil {
		t.Fatal(err)
	}
	if c := used(); c.Used != 1 || c.Bytes != 0 {
		t.Fatalf("after a resumed download: %+v; want 1 used", c)
	}
	// Four segments at once: admitted together, one download.
	var dones []func(context.Context, int64, bool) error
	for range 4 {
		done, err := d.Begin(ctx, l, size, size/4)
		if err != nil {
			t.Fatalf("a segment refused: %v", err)
		}
		dones = append(dones, done)
	}
	// A fifth request for the whole file while they run: nothing left.
	if _, err := d.Begin(ctx, l, size, size); !errors.Is(err, ErrInFlight) {
		t.Errorf("a whole download beside the segments: %v; want ErrInFlight", err)
	}
	for _, done := range dones {
		if err := done(ctx, size/4, true); err != nil {
			t.Fatal(err)
		}
	}
	if c := used(); c.Used != 2 {
		t.Fatalf("after a segmented download: %+v; want 2 used", c)
	}
	if err := send(10, 10); !errors.Is(err, ErrUsedUp) {
		t.Errorf("a third download: %v; want ErrUsedUp", err)
	}
}

func TestDownloadsEmptyFile(t *testing.T) {
	d := New(Config{State: diskState(t)})
	ctx := context.Background()
	l := &Link{ID: "BBBBBBBBBBBBBBBBBBBBBB", Kind: File, MaxDownloads: 1}
	done, err := d.Begin(ctx, l, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := done(ctx, 0, false); err != nil { // a HEAD, a 304: no download
		t.Fatal(err)
	}
	if done, err = d.Begin(ctx, l, 0, 0); err != nil {
		t.Fatalf("after a response that was no download: %v", err)
	}
	done(ctx, 0, true)
	if _, err := d.Begin(ctx, l, 0, 0); !errors.Is(err, ErrUsedUp) {
		t.Errorf("after the one download of an empty file: %v; want ErrUsedUp", err)
	}
}

// TestDownloadsRace: responses through one link ending at once on two
// instances sharing a state area each count once.
func TestDownloadsRace(t *testing.T) {
	onEachState(t, func(t *testing.T, state largo.State) {
		ctx := context.Background()
		l := &Link{ID: "CCCCCCCCCCCCCCCCCCCCCC", Kind: File, MaxDownloads: 1000, Expires: time.Now().Add(time.Hour)}
		instances := []*Links{New(Config{State: state}), New(Config{State: state})}
		const size, workers, each = 10, 3, 4
		var wg sync.WaitGroup
		for _, ls := range instances {
			for range workers {
				wg.Go(func() {
					for range each {
						done, err := ls.Begin(ctx, l, size, size)
						if err != nil {
							t.Error(err)
							return
						}
						// Half a download each: two make one.
						if err := done(ctx, size/2, false); err != nil {
							t.Error(err)
						}
					}
				})
			}
		}
		wg.Wait()
		c, err := New(Config{State: state}).Downloads(ctx, l.ID)
		if want := (Count{Used: 2 * workers * each / 2}); err != nil || c != want {
			t.Errorf("count = %+v, %v; want %+v", c, err, want)
		}
	})
}
