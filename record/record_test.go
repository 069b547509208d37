package record

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"largo"
	"largo/internal/teststore"
)

// states runs f on a folder's state area and on a bucket's, each shared
// by two Stores, as by two instances of the server.
func states(t *testing.T, f func(t *testing.T, st largo.State)) {
	teststore.Each(t, func(t *testing.T, st teststore.Store) { f(t, st.State()) })
}

type counter struct {
	N    int    `json:"n"`
	Note string `json:"note,omitempty"`
}

func TestTable(t *testing.T) {
	states(t, func(t *testing.T, st largo.State) {
		ctx := context.Background()
		now := time.Unix(1e9, 0)
		clock := func() time.Time { return now }
		a := NewTable[counter](New(st, Options{Now: clock}), "t/", TableOptions{CacheSize: 16, NegativeTTL: time.Second})
		other := NewTable[counter](New(st, Options{Now: clock}), "t/", TableOptions{})
		if _, err := a.Get(ctx, "k"); !errors.Is(err, largo.ErrNotFound) {
			t.Fatalf("Get of nothing: %v", err)
		}
		// Another instance writes it: the absence is believed for the
		// negative TTL, then the record is found.
		if err := other.Put(ctx, "k", counter{N: 1}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Get(ctx, "k"); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("Get within the negative TTL: %v; want the cached absence", err)
		}
		now = now.Add(time.Second)
		if v, err := a.Get(ctx, "k"); err != nil || v.N != 1 {
			t.Errorf("Get after the negative TTL: %+v, %v", v, err)
		}
		if err := a.Create(ctx, "k", counter{N: 9}); !errors.Is(err, largo.ErrExist) {
			t.Errorf("Create over a record: %v", err)
		}
		if err := a.Delete(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Get(ctx, "k"); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("Get after Delete: %v", err)
		}
		if err := a.Create(ctx, "k", counter{N: 2}); err != nil {
			t.Errorf("Create where none is: %v", err)
		}
		// A damaged record is an error, not a zero value.
		st.Put(ctx, "t/bad", []byte("{not json"))
		if _, err := other.Get(ctx, "bad"); !errors.Is(err, ErrDamaged) || errors.Is(err, largo.ErrNotFound) {
			t.Errorf("Get of a damaged record: %v", err)
		}
	})
}

// TestUpdateConcurrent: two instances, four writers each, add to one
// counter: every addition counts once.
func TestUpdateConcurrent(t *testing.T) {
	states(t, func(t *testing.T, st largo.State) {
		ctx := context.Background()
		tables := []*Table[counter]{
			NewTable[counter](New(st, Options{}), "c/", TableOptions{CacheSize: 8}),
			NewTable[counter](New(st, Options{}), "c/", TableOptions{CacheSize: 8}),
		}
		const writers, each = 4, 10
		var wg sync.WaitGroup
		errs := make(chan error, 2*writers*each)
		for _, tb := range tables {
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range each {
						if _, err := tb.Update(ctx, "n", func(v *counter, _ bool) (Change, error) {
							v.N++
							return Write, nil
						}); err != nil {
							errs <- err
						}
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		failed := 0
		for err := range errs {
			if !errors.Is(err, ErrConflict) {
				t.Fatalf("Update: %v", err)
			}
			failed++
		}
		fresh := NewTable[counter](New(st, Options{}), "c/", TableOptions{})
		v, err := fresh.Get(ctx, "n")
		if err != nil || v.N != 2*writers*each-failed {
			t.Errorf("counter = %d, %v; want %d (%d updates gave up)", v.N, err, 2*writers*each-failed, failed)
		}
		if failed*4 > 2*writers*each {
			t.Errorf("%d of %d updates gave up", failed, 2*writers*each)
		}
		// Keep and Remove.
		tables[0].Update(ctx, "n", func(v *counter, _ bool) (Change, error) { v.N = -1; return Keep, nil })
		if v, _ := fresh.Get(ctx, "n"); v.N < 0 {
			t.Error("Keep wrote the record")
		}
		tables[0].Update(ctx, "n", func(*counter, bool) (Change, error) { return Remove, nil })
		if _, err := fresh.Get(ctx, "n"); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("after Remove: %v", err)
		}
		boom := errors.New("boom")
		if _, err := tables[0].Update(ctx, "n", func(*counter, bool) (Change, error) { return Write, boom }); !errors.Is(err, boom) {
			t.Errorf("Update whose function fails: %v", err)
		}
	})
}

func TestPageAndSweep(t *testing.T) {
	states(t, func(t *testing.T, st largo.State) {
		ctx := context.Background()
		tb := NewTable[counter](New(st, Options{}), "q/", TableOptions{})
		var want []string
		for i := range 25 {
			k := fmt.Sprintf("%04d", (i*7)%25) // written out of order
			want = append(want, k)
			if err := tb.Put(ctx, k, counter{N: (i * 7) % 25}); err != nil {
				t.Fatal(err)
			}
		}
		st.Put(ctx, "qq/other", []byte(`{}`)) // another table's
		slices.Sort(want)
		var got []string
		for after := ""; ; {
			page, err := tb.Page(ctx, after, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				got = append(got, e.Key)
				if fmt.Sprintf("%04d", e.Value.N) != e.Key {
					t.Errorf("%s holds %d", e.Key, e.Value.N)
				}
			}
			if len(page) < 10 {
				break
			}
			after = page[len(page)-1].Key
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages: %v; want %v", got, want)
		}
		n, err := tb.Sweep(ctx, func(_ context.Context, e Entry[counter]) bool { return e.Value.N%2 == 0 })
		if err != nil || n != 13 {
			t.Errorf("Sweep = %d, %v; want 13", n, err)
		}
		left := 0
		for e, err := range tb.All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Value.N%2 == 0 {
				t.Errorf("%s kept by the sweep", e.Key)
			}
			left++
		}
		if left != 12 {
			t.Errorf("%d records left; want 12", left)
		}
	})
}

func TestLease(t *testing.T) {
	states(t, func(t *testing.T, st largo.State) {
		ctx := context.Background()
		now := time.Unix(2e9, 0)
		clock := func() time.Time { return now }
		a, b := New(st, Options{Now: clock}), New(st, Options{Now: clock})
		la, err := a.Acquire(ctx, "leases/job", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(ctx, "leases/job", time.Minute); !errors.Is(err, ErrHeld) {
			t.Fatalf("a second holder: %v; want ErrHeld", err)
		}
		now = now.Add(40 * time.Second)
		if la.Holding() {
			t.Error("Holding after half the lease's life without renewal")
		}
		if err := la.Renew(ctx); err != nil || !la.Holding() {
			t.Fatalf("Renew: %v, holding %v", err, la.Holding())
		}
		// Expired, it is taken over; its old holder has lost it.
		now = now.Add(2 * time.Minute)
		lb, err := b.Acquire(ctx, "leases/job", time.Minute)
		if err != nil {
			t.Fatalf("taking over an expired lease: %v", err)
		}
		if err := la.Renew(ctx); !errors.Is(err, ErrLost) {
			t.Errorf("Renew of a lease taken over: %v; want ErrLost", err)
		}
		if err := la.Release(ctx); err != nil {
			t.Errorf("Release of a lost lease: %v", err)
		}
		if _, err := a.Acquire(ctx, "leases/job", time.Minute); !errors.Is(err, ErrHeld) {
			t.Errorf("the lost holder's Release freed the new holder's lease: %v", err)
		}
		if err := lb.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Get(ctx, "leases/job"); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("record after Release: %v", err)
		}
		if _, err := a.Acquire(ctx, "leases/job", time.Minute); err != nil {
			t.Errorf("after a Release: %v", err)
		}
		// A lease of a process of this machine that is gone is taken at once.
		host, _ := os.Hostname()
		dead, _ := json.Marshal(leaseRecord{Holder: "crashed", Host: host, PID: 1 << 22, Expires: now.Add(time.Hour)})
		st.Put(ctx, "leases/crashed", dead)
		if _, err := b.Acquire(ctx, "leases/crashed", time.Minute); err != nil {
			t.Errorf("the lease of a gone process: %v", err)
		}
	})
}

// TestKeep: a kept lease is renewed by itself until released.
func TestKeep(t *testing.T) {
	d := teststore.Disk(t)
	ctx := context.Background()
	a, b := New(d.State(), Options{}), New(d.State(), Options{})
	l, err := a.Acquire(ctx, "leases/kept", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	l.Keep(ctx)
	time.Sleep(500 * time.Millisecond) // more than the lease's life: only renewals keep it
	if !l.Holding() {
		t.Error("a kept lease lapsed")
	}
	if _, err := b.Acquire(ctx, "leases/kept", time.Second); !errors.Is(err, ErrHeld) {
		t.Errorf("a kept lease was taken: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, "leases/kept", time.Second); err != nil {
		t.Errorf("after Release: %v", err)
	}
}

// TestSweepLeases: a sweep removes the leases no one holds (expired,
// damaged) and leaves a held one, renewed, alone.
func TestSweepLeases(t *testing.T) {
	states(t, func(t *testing.T, st largo.State) {
		ctx := context.Background()
		var mu sync.Mutex
		now := time.Unix(2e9, 0)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		wait := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		a, b := New(st, Options{Now: clock}), New(st, Options{Now: clock})
		la, err := a.Acquire(ctx, "leases/kept", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(ctx, "leases/dropped", time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := st.Put(ctx, "leases/damaged", []byte("{")); err != nil {
			t.Fatal(err)
		}
		if n, err := b.SweepLeases(ctx, "leases/"); err != nil || n != 1 {
			t.Errorf("sweep of two live leases and a damaged one = %d, %v; want 1", n, err)
		}
		wait(50 * time.Second)
		if err := la.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		wait(20 * time.Second) // the dropped one expired, the kept one lives on
		if n, err := a.SweepLeases(ctx, "leases/"); err != nil || n != 1 {
			t.Errorf("sweep = %d, %v; want 1", n, err)
		}
		var left []string
		for rec, err := range st.List(ctx, "leases/") {
			if err != nil {
				t.Fatal(err)
			}
			left = append(left, rec.Key)
		}
		if !slices.Equal(left, []string{"leases/kept"}) {
			t.Errorf("left after the sweeps: %v; want the kept lease alone", left)
		}
		if err := la.Renew(ctx); err != nil {
			t.Errorf("a held lease after the sweeps: %v", err)
		}
	})
}

// refusing is a state whose store turns out to ignore conditions (an S3
// server that does not apply If-Match, found by s3.PrepareWrites): it
// reads versions, but refuses every conditional write.
type refusing struct{ largo.State }

func (r refusing) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	return r.State.(largo.StateSwapper).GetVersion(ctx, key)
}
func (refusing) Create(context.Context, string, []byte) error { return largo.ErrUnsupported }
func (refusing) Swap(context.Context, string, []byte, string) (string, error) {
	return "", largo.ErrUnsupported
}
func (refusing) DeleteIf(context.Context, string, string) error { return largo.ErrUnsupported }

// TestRefusedConditions: on a state that refuses conditional writes, a
// Store makes its changes under its own lock, as on one without them:
// every update of one process counts once, creations still create only
// where nothing is, and leases are taken and released.
func TestRefusedConditions(t *testing.T) {
	d := teststore.Disk(t)
	ctx := context.Background()
	s := New(refusing{d.State()}, Options{})
	tb := NewTable[counter](s, "c/", TableOptions{CacheSize: 8})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if _, err := tb.Update(ctx, "n", func(v *counter, _ bool) (Change, error) {
					v.N++
					return Write, nil
				}); err != nil {
					t.Errorf("Update: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if v, err := NewTable[counter](s, "c/", TableOptions{}).Get(ctx, "n"); err != nil || v.N != 80 {
		t.Errorf("counter = %d, %v; want 80", v.N, err)
	}
	if s.Conditional() {
		t.Error("Conditional on a state that refused a condition")
	}
	if err := tb.Create(ctx, "n", counter{}); !errors.Is(err, largo.ErrExist) {
		t.Errorf("Create over a record: %v; want ErrExist", err)
	}
	l, err := s.Acquire(ctx, "leases/job", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(ctx); err != nil {
		t.Errorf("Renew: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	if _, err := d.State().Get(ctx, "leases/job"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("the lease's record after Release: %v", err)
	}
}
