package pace

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"
)

// clock is a clock the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestQuantum(t *testing.T) {
	for rate, want := range map[int64][2]int{
		1:         {minQuantum, minQuantum},
		100_000:   {minQuantum, minQuantum},
		1 << 20:   {128 << 10, 128 << 10},
		10e6:      {1_250_000, 1_250_000},
		32 << 20:  {4 << 20, 4 << 20},
		128 << 20: {maxQuantum, maxQuantum},
		400e6:     {50e6, maxQuantum},
		1 << 40:   {1 << 37, maxQuantum},
	} {
		if b, q := Burst(rate), Quantum(rate); b != want[0] || q != want[1] {
			t.Errorf("Burst, Quantum(%d) = %d, %d; want %d, %d", rate, b, q, want[0], want[1])
		}
	}
}

// TestNoPacer: nothing to wait on is no Pacer at all, so that a server
// without caps pays nothing.
func TestNoPacer(t *testing.T) {
	var nilLimits *Limits
	if p := nilLimits.Start(Send, Key{Kind: User, Name: "a", Rate: 1}); p != nil {
		t.Error("nil Limits made a Pacer")
	}
	l := New(Config{})
	if p := l.Start(Send, Key{Kind: User, Name: "a"}, Key{Kind: Address, Name: "x", Rate: -1}); p != nil {
		t.Error("keys without a rate made a Pacer")
	}
	if n := l.Keys(); n != 0 {
		t.Errorf("%d keys held; want none", n)
	}
	var p *Pacer
	p.Close() // a nil Pacer closes
}

// TestShared checks that the transfers of one key share its bucket,
// whichever connection they come on, that keys of other names or the
// other direction have buckets of their own, and that the strictest
// bucket governs.
func TestShared(t *testing.T) {
	c := newClock()
	l := New(Config{Now: c.now})
	const r = 1 << 20 // quantum 128 KiB: one eighth of a second
	q := Quantum(r)
	addr := Key{Kind: Address, Name: "192.0.2.1", Rate: r}
	a, b := l.Start(Send, addr), l.Start(Send, addr)
	defer a.Close()
	defer b.Close()
	if a.Quantum() != q {
		t.Fatalf("quantum %d; want %d", a.Quantum(), q)
	}
	now := c.now()
	if _, d, _ := a.reserve(now, q); d != 0 {
		t.Errorf("the first quantum waits %s; want none (the bucket starts full)", d)
	}
	if _, d, k := b.reserve(now, q); d != time.Second/8 || k != Address {
		t.Errorf("the second connection's quantum waits %s for %s; want 125ms for address", d, k)
	}
	if _, d, _ := a.reserve(now, q); d != time.Second/4 {
		t.Errorf("the third quantum waits %s; want 250ms", d)
	}

	other := l.Start(Send, Key{Kind: Address, Name: "192.0.2.2", Rate: r})
	defer other.Close()
	up := l.Start(Receive, addr)
	defer up.Close()
	for _, p := range []*Pacer{other, up} {
		if _, d, _ := p.reserve(now, q); d != 0 {
			t.Errorf("another address or direction waits %s; want a bucket of its own", d)
		}
	}

	// The strictest governs: a user at a quarter of the address's rate.
	c.add(time.Hour)
	now = c.now()
	u := l.Start(Send, Key{Kind: User, Name: "alice", Rate: r / 4}, Key{Kind: Address, Name: "192.0.2.3", Rate: r})
	defer u.Close()
	if u.Quantum() != minQuantum {
		t.Fatalf("quantum %d; want the smaller bucket's %d", u.Quantum(), minQuantum)
	}
	u.reserve(now, minQuantum)
	if _, d, k := u.reserve(now, minQuantum); k != User || d != time.Duration(float64(minQuantum)/(r/4)*float64(time.Second)) {
		t.Errorf("waits %s for %s; want the user's bucket to govern", d, k)
	}
}

// TestTransferOwn: a cap per transfer is a bucket of each transfer's own.
func TestTransferOwn(t *testing.T) {
	c := newClock()
	l := New(Config{Transfer: 1 << 20, Now: c.now})
	a, b := l.Start(Send), l.Start(Send)
	defer a.Close()
	defer b.Close()
	now := c.now()
	for _, p := range []*Pacer{a, b} {
		if _, d, _ := p.reserve(now, p.Quantum()); d != 0 {
			t.Errorf("waits %s; want a full bucket of its own", d)
		}
	}
	if _, d, k := a.reserve(now, a.Quantum()); d != time.Second/8 || k != Transfer {
		t.Errorf("waits %s for %s; want 125ms for transfer", d, k)
	}
	if n := l.Keys(); n != 0 {
		t.Errorf("%d shared keys; a transfer's own bucket is not one", n)
	}
}

// TestDuplicateKey: a key given twice counts once.
func TestDuplicateKey(t *testing.T) {
	c := newClock()
	l := New(Config{Now: c.now})
	k := Key{Kind: User, Name: "bob", Rate: 1 << 20}
	p := l.Start(Send, k, k)
	if p.n != 1 {
		t.Fatalf("%d buckets; want 1", p.n)
	}
	p.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := p.held[0]; b.held != 0 || len(l.busy) != 0 {
		t.Errorf("bucket held by %d after Close (%d keys busy)", b.held, len(l.busy))
	}
}

// TestWait waits for real: four connections of one address move 1 MB
// under a cap of 4 MB/s, which takes at least the time of the bytes
// beyond the first burst.
func TestWait(t *testing.T) {
	var mu sync.Mutex
	throttled := map[Kind]time.Duration{}
	l := New(Config{Throttled: func(k Kind, d time.Duration) {
		mu.Lock()
		throttled[k] += d
		mu.Unlock()
	}})
	const r, total = 4e6, 1e6
	key := Key{Kind: Address, Name: "192.0.2.9", Rate: r}
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			p := l.Start(Send, key)
			defer p.Close()
			for sent := 0; sent < total/4; sent += 50_000 {
				if err := p.Wait(context.Background(), 50_000); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	least := time.Duration(float64(total-Burst(r)) / r * float64(time.Second))
	if took := time.Since(start); took < least {
		t.Errorf("1 MB at 4 MB/s over 4 connections took %s; at least %s", took, least)
	}
	mu.Lock()
	defer mu.Unlock()
	if throttled[Address] <= 0 || len(throttled) != 1 {
		t.Errorf("throttled %v; want time for address alone", throttled)
	}
}

// TestWaitLarge: a wait for more than a bucket holds is cut into waits
// the bucket can give.
func TestWaitLarge(t *testing.T) {
	l := New(Config{})
	const r = 16 << 20
	p := l.Start(Send, Key{Kind: Link, Name: "L", Rate: r})
	defer p.Close()
	start := time.Now()
	if err := p.Wait(context.Background(), 12<<20); err != nil { // six bursts
		t.Fatal(err)
	}
	least := time.Duration(float64(12<<20-Burst(r)) / r * float64(time.Second))
	if took := time.Since(start); took < least {
		t.Errorf("12 MiB at 16 MiB/s took %s; at least %s", took, least)
	}
}

// TestWaitCancelled: a wait ends with its context, and gives back what it
// had taken.
func TestWaitCancelled(t *testing.T) {
	c := newClock()
	l := New(Config{Now: c.now})
	key := Key{Kind: User, Name: "carol", Rate: minQuantum} // a quantum a second
	p := l.Start(Send, key)
	defer p.Close()
	if err := p.Wait(context.Background(), minQuantum); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- p.Wait(ctx, minQuantum) // a second, on the test's frozen clock
	}()
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Fatalf("Wait returned %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not end with its context")
	}
	// What the cancelled wait took is back: the next waits a second, not
	// two.
	q := l.Start(Send, key)
	defer q.Close()
	if _, d, _ := q.reserve(c.now(), minQuantum); d != time.Second {
		t.Errorf("after a cancelled wait the next waits %s; want 1s", d)
	}
}

// TestRateChange: a key's new rate (an access file reloaded) is the
// bucket's from the next transfer on.
func TestRateChange(t *testing.T) {
	c := newClock()
	l := New(Config{Now: c.now})
	a := l.Start(Send, Key{Kind: User, Name: "dave", Rate: 1 << 20})
	a.Close()
	b := l.Start(Send, Key{Kind: User, Name: "dave", Rate: 8 << 20})
	defer b.Close()
	if b.Quantum() != Quantum(8<<20) {
		t.Errorf("quantum %d; want the new rate's %d", b.Quantum(), Quantum(8<<20))
	}
	c.add(time.Second) // the bucket fills to its new burst
	now := c.now()
	b.reserve(now, Quantum(8<<20))
	if _, d, _ := b.reserve(now, Quantum(8<<20)); d != time.Second/8 {
		t.Errorf("waits %s; want 125ms at the new rate", d)
	}
}

// addressRate is the cap of the client addresses of addressKey.
const addressRate = 1 << 20

// addressKey is the key of the i-th client address, capped at
// addressRate.
func addressKey(i int) Key {
	return Key{Kind: Address, Name: "198.51.100." + strconv.Itoa(i), Rate: addressRate}
}

// TestBounded: many addresses, each with a short transfer, never hold
// more than the bound of keys, while keys in flight are never forgotten
// and an idle key in debt is kept until it is paid (short of the bound),
// so that a client cannot get a fresh bucket by reconnecting.
func TestBounded(t *testing.T) {
	c := newClock()
	const bound, r = 16, addressRate
	l := New(Config{MaxKeys: bound, Now: c.now})
	key := addressKey

	// A key in debt, idle: kept while it pays.
	debtor := l.Start(Send, key(0))
	debtor.reserve(c.now(), Quantum(r))
	debtor.reserve(c.now(), Quantum(r))
	debtor.Close()

	// Transfers in flight, more than the bound.
	var open []*Pacer
	for i := 1; i <= 2*bound; i++ {
		p := l.Start(Send, key(i))
		p.reserve(c.now(), Quantum(r))
		open = append(open, p)
	}
	// The debtor comes back: its bucket is the one it left.
	back := l.Start(Send, key(0))
	if _, d, _ := back.reserve(c.now(), Quantum(r)); d != time.Second/4 {
		t.Errorf("a client back after a reconnect waits %s; want 250ms (its debt)", d)
	}
	back.Close()
	for _, p := range open {
		if _, d, _ := p.reserve(c.now(), Quantum(r)); d != time.Second/8 {
			t.Fatalf("a key in flight was forgotten: waits %s; want 125ms", d)
		}
		p.Close()
	}

	// Many short transfers from many addresses: the map stays bounded.
	for i := 100; i < 20_000; i++ {
		p := l.Start(Send, key(i))
		p.reserve(c.now(), 1000)
		p.Close()
		c.add(time.Millisecond)
		if n := l.Keys(); n > 2*2*bound+1 {
			t.Fatalf("%d keys after %d addresses; want at most %d", n, i, 4*bound+1)
		}
	}
}

// TestIdleKeysAtBound: past the bound of idle keys in debt, the least
// recently used goes, one at a time, and the keys used last keep their
// debt: a client making new keys cannot wipe the debt of a recent one.
func TestIdleKeysAtBound(t *testing.T) {
	c := newClock()
	const bound, r = 16, addressRate
	l := New(Config{MaxKeys: bound, Now: c.now})
	key := addressKey
	const n = 2*bound + bound/2
	for i := range n {
		p := l.Start(Send, key(i))
		p.reserve(c.now(), Quantum(r))
		p.reserve(c.now(), Quantum(r)) // a burst in debt
		p.Close()
	}
	if k := l.Keys(); k != bound {
		t.Errorf("%d keys kept; want %d", k, bound)
	}
	for i := n - bound; i < n; i++ {
		p := l.Start(Send, key(i))
		if _, d, _ := p.reserve(c.now(), Quantum(r)); d != time.Second/4 {
			t.Errorf("key %d, among the last used, waits %s; want 250ms (its debt)", i, d)
		}
		p.Close()
	}
	p := l.Start(Send, key(0))
	if _, d, _ := p.reserve(c.now(), Quantum(r)); d != 0 {
		t.Errorf("key 0, past the bound, waits %s; want a new bucket", d)
	}
	p.Close()
}

// BenchmarkWait is the cost of one wait that does not delay, on the
// buckets of a user and an address: what pacing adds to each quantum of a
// transfer under its cap.
func BenchmarkWait(b *testing.B) {
	l := New(Config{})
	p := l.Start(Send, Key{Kind: User, Name: "u", Rate: 1 << 50}, Key{Kind: Address, Name: "a", Rate: 1 << 50})
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p.Wait(ctx, 32<<10)
	}
}

// BenchmarkStart is the cost of starting and closing the pacer of a
// request with a user and an address to wait on.
func BenchmarkStart(b *testing.B) {
	l := New(Config{})
	keys := []Key{{Kind: User, Name: "u", Rate: 1 << 30}, {Kind: Address, Name: "a", Rate: 1 << 30}}
	b.ReportAllocs()
	for b.Loop() {
		l.Start(Send, keys...).Close()
	}
}
