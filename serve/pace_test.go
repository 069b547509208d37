package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/auth"
	"largo/disk"
	"largo/gate"
	"largo/ingest"
	"largo/links"
	"largo/pace"
)

// paceAccess gives alice a cap of her own and carol none.
const paceAccess = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]
rate = "1MB"

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[user]]
name = "carol"
tokens = ["carol-token-0123456789"]
rate = "0"

[[rule]]
path = "/"
users = ["*"]
allow = ["all"]
`

// throttleLog records the waits pace reports.
type throttleLog struct {
	mu sync.Mutex
	by map[pace.Kind]time.Duration
}

func (l *throttleLog) add(k pace.Kind, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = map[pace.Kind]time.Duration{}
	}
	l.by[k] += d
}

func (l *throttleLog) get(k pace.Kind) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.by[k]
}

// newPaceHandler serves files under paceAccess with the caps of cfg, writes
// on.
func newPaceHandler(t *testing.T, cfg pace.Config, files map[string]string) *Handler {
	t.Helper()
	_, dir := newTestHandler(t, files)
	p := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(p, []byte(paceAccess), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	g, gated := gatedStore(s, auth.New(pol, nil), nil)
	return New(Config{Store: gated, Gate: g, Access: g.Access(), Writes: ingest.New(ingest.Config{Store: gated}), Rates: pace.New(cfg)})
}

// TestRateKeys: the keys a request waits on, by its principal and its
// address.
func TestRateKeys(t *testing.T) {
	h := newPaceHandler(t, pace.Config{User: 4e6, Address: 8e6, Link: 2e6}, map[string]string{"f": "x"})
	ctx := context.Background()
	ls := h.gate.Links()
	mk := func(maker string, rate int64) string {
		_, l, err := ls.Make(ctx, links.Link{Kind: links.File, Path: "f", Maker: maker, Expires: time.Now().Add(time.Hour), MaxRate: rate}, "")
		if err != nil {
			t.Fatal(err)
		}
		return l.ID
	}
	slow, fast, operator := mk("alice", 1e6), mk("alice", 5e6), mk("", 0)
	v4, v6 := "192.0.2.1:4000", "[2001:db8:1:2::99]:4000"
	for _, tt := range []struct {
		who    gate.Principal
		remote string
		want   []pace.Key
	}{
		{gate.Anonymous(), v6, []pace.Key{{Kind: pace.Address, Name: "2001:db8:1:2::/64", Rate: 8e6}}},
		{gate.Anonymous(), "[::ffff:192.0.2.1]:1", []pace.Key{{Kind: pace.Address, Name: "192.0.2.1", Rate: 8e6}}},
		{gate.Anonymous(), "@", nil}, // a listener without addresses
		{gate.User("alice"), v4, []pace.Key{{Kind: pace.User, Name: "alice", Rate: 1e6}, {Kind: pace.Address, Name: "192.0.2.1", Rate: 8e6}}},
		{gate.User("bob"), v4, []pace.Key{{Kind: pace.User, Name: "bob", Rate: 4e6}, {Kind: pace.Address, Name: "192.0.2.1", Rate: 8e6}}},
		{gate.User("carol"), v4, []pace.Key{{Kind: pace.User, Name: "carol", Rate: 0}, {Kind: pace.Address, Name: "192.0.2.1", Rate: 8e6}}},
		// A link: its own rate when lower than the default, and its
		// maker's cap too.
		{gate.LinkHolder(slow), v4, []pace.Key{{Kind: pace.Link, Name: slow, Rate: 1e6}, {Kind: pace.User, Name: "alice", Rate: 1e6}, {Kind: pace.Address, Name: "192.0.2.1", Rate: 8e6}}},
		{gate.LinkHolder(fast), v4, []pace.Key{{Kind: pace.Link, Name: fast, Rate: 2e6}, {Kind: pace.User, Name: "alice", Rate: 1e6}, {Kind: pace.Address, Name: "192.0.2.1", Rate: 8e6}}},
		{gate.LinkHolder(operator), v4, []pace.Key{{Kind: pace.Link, Name: operator, Rate: 2e6}, {Kind: pace.Address, Name: "192.0.2.1", Rate: 8e6}}},
	} {
		r := httptest.NewRequest("GET", "/f", nil)
		r.RemoteAddr = tt.remote
		r = r.WithContext(gate.With(r.Context(), tt.who))
		if got := h.rateKeys(r, nil); !slices.Equal(got, tt.want) {
			t.Errorf("%s from %s: keys %v; want %v", tt.who, tt.remote, got, tt.want)
		}
	}
}

// TestPacedRoutes: a download and an upload through the handler wait on
// the address's cap, and the waits are reported by kind; a server
// without caps makes no Pacer.
func TestPacedRoutes(t *testing.T) {
	var log throttleLog
	const rate = 1 << 20
	big := strings.Repeat("z", 512<<10)
	h := newPaceHandler(t, pace.Config{Address: rate, Throttled: log.add}, map[string]string{"big": big})

	start := time.Now()
	rec := do(h, "GET", "/big")
	least := time.Duration(float64(len(big)-pace.Burst(rate)) / rate * float64(time.Second))
	if rec.Code != 200 || rec.Body.Len() != len(big) {
		t.Fatalf("GET: %d with %d bytes", rec.Code, rec.Body.Len())
	}
	if took := time.Since(start); took < least {
		t.Errorf("512 KiB under 1 MiB/s took %s; at least %s", took, least)
	}
	if log.get(pace.Address) <= 0 {
		t.Error("the download's waits were not reported")
	}

	// An upload: its own direction's bucket, full at first.
	req := httptest.NewRequest("PUT", "/up", strings.NewReader(big))
	req.Header.Set("Authorization", "Bearer bob-token-0123456789")
	req.RemoteAddr = "192.0.2.1:1234"
	start = time.Now()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("PUT: %d %s", rec.Code, rec.Body)
	}
	if took := time.Since(start); took < least {
		t.Errorf("a 512 KiB upload under 1 MiB/s took %s; at least %s", took, least)
	}
}
