package resumable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	tusd "github.com/tus/tusd/v2/pkg/handler"

	"largo"
	"largo/disk"
	"largo/internal/process"
)

// TestLeases: the leases of two servers on one state area. One append
// holds an upload at a time; a lease its server stopped renewing is taken
// over, and its old holder then neither takes bytes nor removes the new
// holder's lease.
func TestLeases(t *testing.T) {
	s, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a := newLeases(s.State(), time.Hour, clock) // renewals far apart: the test moves the clock
	b := newLeases(s.State(), time.Hour, clock)
	if a == nil || b == nil {
		t.Fatal("no leases on a folder's state area")
	}
	la, err := a.take(ctx, "up1")
	if err != nil || !la.valid() {
		t.Fatalf("take: %v", err)
	}
	if _, err := a.take(ctx, "up1"); !errors.Is(err, errBusy) {
		t.Errorf("a second take through the same server: %v; want errBusy", err)
	}
	_, err = b.take(ctx, "up1")
	var te tusd.Error
	if !errors.Is(err, errBusy) || !errors.As(err, &te) || te.HTTPResponse.StatusCode != http.StatusLocked {
		t.Errorf("take through the other server: %v; want errBusy, 423", err)
	}
	if lb, err := b.take(ctx, "up2"); err != nil {
		t.Errorf("take of another upload: %v", err)
	} else {
		lb.release()
	}
	la.release()
	lb, err := b.take(ctx, "up1")
	if err != nil {
		t.Fatalf("take after the release: %v", err)
	}
	// b's server dies: its lease is never renewed nor released.
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if lb.valid() {
		t.Error("a lease past its life still takes bytes")
	}
	la, err = a.take(ctx, "up1")
	if err != nil {
		t.Fatalf("takeover of an expired lease: %v", err)
	}
	lb.release() // late: must leave a's lease alone
	if _, err := b.take(ctx, "up1"); !errors.Is(err, errBusy) {
		t.Errorf("take after the old holder's late release: %v; want errBusy", err)
	}
	la.release()

	// Takeovers at once, of an expired lease, through both servers.
	for round := range 10 {
		mu.Lock()
		now = now.Add(2 * time.Hour)
		mu.Unlock()
		var wg sync.WaitGroup
		got := make([]*lease, 8)
		errs := make([]error, 8)
		rctx, cancel := context.WithCancel(ctx)
		for i := range 8 {
			wg.Go(func() { got[i], errs[i] = []*leases{a, b}[i%2].take(rctx, "up3") })
		}
		wg.Wait()
		held := 0
		for i, err := range errs {
			switch {
			case err == nil:
				held++
			case !errors.Is(err, errBusy):
				t.Errorf("round %d: take %d: %v", round, i, err)
			}
		}
		if held != 1 {
			t.Fatalf("round %d: %d appends hold the upload; want 1", round, held)
		}
		// Left unreleased, as by a server that died: its renewals stop
		// with its context, and the next round takes it over.
		cancel()
		for _, le := range got {
			if le != nil {
				le.ls.forget(le.id)
			}
		}
	}
	// The last one, its server gone, is swept once expired, and only then.
	if n, err := a.sweep(ctx); err != nil || n != 0 {
		t.Errorf("sweep of a live lease = %d, %v; want 0", n, err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	if n, err := b.sweep(ctx); err != nil || n != 1 {
		t.Errorf("sweep = %d, %v; want 1", n, err)
	}
	for rec, err := range s.State().List(ctx, leasePrefix) {
		t.Errorf("left after the sweep: %v, %v", rec.Key, err)
	}
}

// BenchmarkPatch: tus PATCHes of 1 and 16 MiB (the page's chunks) to one
// upload on a folder, with the append's lease (taken, the upload read
// again, released) and without, side by side: what the lease costs a
// single server.
func BenchmarkPatch(b *testing.B) {
	for _, chunk := range []int{1 << 20, 16 << 20} {
		data := strings.Repeat("x", chunk)
		for _, leased := range []bool{true, false} {
			name := fmt.Sprintf("%dMiB/lease", chunk>>20)
			if !leased {
				name = fmt.Sprintf("%dMiB/none", chunk>>20)
			}
			b.Run(name, func(b *testing.B) {
				f := newFixture(b, Config{})
				if !leased {
					f.h.leases = nil
				} else if f.h.leases == nil {
					b.Fatal("no leases on a folder")
				}
				url, resp := f.create(b, int64(b.N+1)*int64(chunk), map[string]string{"filename": "bench.bin"})
				if resp.StatusCode != 201 {
					b.Fatalf("create: %d", resp.StatusCode)
				}
				b.SetBytes(int64(chunk))
				b.ResetTimer()
				for i := range b.N {
					if resp := f.patch(b, url, int64(i)*int64(chunk), data); resp.StatusCode != 204 {
						b.Fatalf("PATCH %d: %d", i, resp.StatusCode)
					}
				}
			})
		}
	}
}

// noConditions is a state area whose store turns out to apply no
// condition to writes.
type noConditions struct{ largo.State }

func (noConditions) Create(context.Context, string, []byte) error { return largo.ErrUnsupported }
func (noConditions) GetVersion(context.Context, string) ([]byte, string, error) {
	return nil, "", largo.ErrUnsupported
}
func (noConditions) Swap(context.Context, string, []byte, string) (string, error) {
	return "", largo.ErrUnsupported
}
func (noConditions) DeleteIf(context.Context, string, string) error { return largo.ErrUnsupported }

// TestLeaseUnsupported: where the store cannot write conditionally,
// appends go on without a lease rather than fail.
func TestLeaseUnsupported(t *testing.T) {
	s, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ls := newLeases(noConditions{s.State()}, time.Minute, time.Now)
	if ls == nil {
		t.Fatal("no leases")
	}
	le, err := ls.take(context.Background(), "up")
	if err != nil || le != nil {
		t.Errorf("take = %v, %v; want no lease and no error", le, err)
	}
	le.release()
	if !le.valid() {
		t.Error("no lease is not valid")
	}
}

// TestLeaseOfDeadProcess: a live lease of a server of this machine whose
// process is gone (a crash, then a restart) is taken over at once; one of
// a process that runs, or of another machine, is not.
func TestLeaseOfDeadProcess(t *testing.T) {
	if !process.Known {
		t.Skip("this system cannot tell a process gone")
	}
	s, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	ls := newLeases(s.State(), time.Minute, time.Now)
	dead := exec.Command(os.Args[0], "-test.run=^$")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	// A lease's record, as every release since leases came writes it.
	type leaseRecord struct {
		Holder  string    `json:"holder"`
		Host    string    `json:"host,omitempty"`
		PID     int       `json:"pid,omitempty"`
		Expires time.Time `json:"expires"`
	}
	for _, tc := range []struct {
		what string
		rec  leaseRecord
		busy bool
	}{
		{"a process gone", leaseRecord{Holder: "x", Host: host, PID: dead.Process.Pid}, false},
		{"a process running", leaseRecord{Holder: "x", Host: host, PID: os.Getppid()}, true},
		{"another machine", leaseRecord{Holder: "x", Host: host + "-other", PID: dead.Process.Pid}, true},
	} {
		tc.rec.Expires = time.Now().Add(time.Hour)
		b, _ := json.Marshal(tc.rec)
		if err := s.State().Put(ctx, leaseKey("up"), b); err != nil {
			t.Fatal(err)
		}
		le, err := ls.take(ctx, "up")
		if busy := errors.Is(err, errBusy); busy != tc.busy || err != nil && !busy {
			t.Errorf("%s: take = %v; want busy %v", tc.what, err, tc.busy)
		}
		le.release()
		s.State().Delete(ctx, leaseKey("up"))
	}
}
