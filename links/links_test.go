package links

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
	"largo/internal/teststore"
)

// clock is a test's settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }

// diskState returns the state area of a new folder.
func diskState(t *testing.T) largo.State { return teststore.Disk(t).State() }

// onEachState runs f on a folder's state area, then on a bucket's.
func onEachState(t *testing.T, f func(t *testing.T, state largo.State)) {
	teststore.Each(t, func(t *testing.T, st teststore.Store) { f(t, st.State()) })
}

func TestTokens(t *testing.T) {
	key := []byte(strings.Repeat("k", 32))
	id := newID()
	tok := sign(key, id)
	verify := func(key []byte, tok string) (string, error) {
		id, err := ID(tok)
		if err == nil && !signedBy(key, tok, id) {
			err = ErrInvalid
		}
		return id, err
	}
	if got, err := verify(key, tok); err != nil || got != id {
		t.Fatalf("valid token: %q, %v", got, err)
	}
	if _, err := verify([]byte(strings.Repeat("j", 32)), tok); !errors.Is(err, ErrInvalid) {
		t.Errorf("rotated key: %v", err)
	}
	other := newID()
	for i, tampered := range []string{
		"v2." + other + tok[strings.LastIndexByte(tok, '.'):],
		tok[:len(tok)-2] + "AA",
		"v3" + tok[2:],
		"v2." + id,
		"garbage",
		"v2.." + tok[strings.LastIndexByte(tok, '.')+1:],
	} {
		if _, err := verify(key, tampered); !errors.Is(err, ErrInvalid) {
			t.Errorf("tampered %d (%s): %v", i, tampered, err)
		}
	}
	if _, err := ID("v1.r.9999999999.cHJpdmF0ZQ.AAAA"); !errors.Is(err, ErrOld) {
		t.Errorf("a link of the first format: %v", err)
	}
	mac := passwordMAC(key, id, "open sesame")
	if !checkPassword(key, id, "open sesame", mac) || checkPassword(key, id, "open sesamE", mac) || checkPassword(key, other, "open sesame", mac) {
		t.Error("checkPassword")
	}
	if strings.Contains(mac, "sesame") || strings.Contains(tok, "sesame") {
		t.Error("the password shows")
	}
}

// TestMaxRateKept: a link's bandwidth cap is part of its record, read
// back by every instance (here a second Links on the same state area,
// with nothing cached).
func TestMaxRateKept(t *testing.T) {
	state, c := diskState(t), newClock()
	ctx := context.Background()
	key := []byte(strings.Repeat("k", 32))
	ls := New(Config{State: state, Key: key, Now: c.now})
	_, made, err := ls.Make(ctx, Link{Kind: Folder, Path: "pub", Maker: "bob", Expires: c.now().Add(time.Hour), MaxRate: 5e6}, "")
	if err != nil {
		t.Fatal(err)
	}
	other := New(Config{State: state, Key: key, Now: c.now})
	l, err := other.Get(ctx, made.ID)
	if err != nil {
		t.Fatal(err)
	}
	if l.MaxRate != 5e6 || l.Rate(0) != 5e6 || l.Rate(1e6) != 1e6 || l.Rate(9e6) != 5e6 {
		t.Errorf("MaxRate %d read back (rates %d %d %d); want 5000000", l.MaxRate, l.Rate(0), l.Rate(1e6), l.Rate(9e6))
	}
	ext, err := other.Extend(ctx, made.ID, "bob", false, c.now().Add(2*time.Hour))
	if err != nil || ext.MaxRate != 5e6 {
		t.Errorf("extended link: MaxRate %d, %v; want it kept", ext.MaxRate, err)
	}
}

// TestPassword: a link with a password needs it, and its record keeps
// only an HMAC of it; a short one is refused where the link is made.
func TestPassword(t *testing.T) {
	c := newClock()
	ls := New(Config{State: diskState(t), Now: c.now})
	ctx := context.Background()
	if _, _, err := ls.Make(ctx, Link{Kind: Folder, Expires: c.now().Add(time.Hour)}, "short"); !errors.Is(err, ErrShortPassword) {
		t.Errorf("a short password: %v", err)
	}
	tok, l, err := ls.Make(ctx, Link{Kind: Folder, Expires: c.now().Add(time.Hour)}, "open sesame")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(l.Password, "sesame") {
		t.Errorf("the record keeps the password: %q", l.Password)
	}
	for pw, want := range map[string]error{"": ErrPassword, "open sesamE": ErrPassword, "open sesame": nil} {
		if _, err := ls.Verify(ctx, tok, pw); !errors.Is(err, want) || want == nil && err != nil {
			t.Errorf("Verify with %q: %v; want %v", pw, err, want)
		}
	}
	c.add(time.Hour)
	if _, err := ls.Verify(ctx, tok, "open sesame"); !errors.Is(err, ErrExpired) {
		t.Errorf("after it expired: %v", err)
	}
}
