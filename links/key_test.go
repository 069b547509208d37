package links

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"largo"
)

// TestKeyMadeWithFirstLink: a server whose state area holds no share key
// makes none; the first link made beside it (another Links on the same
// state area: largo share, or another instance) makes one, and the
// server verifies that link within CacheTTL of its last look, at once if
// it had not looked.
func TestKeyMadeWithFirstLink(t *testing.T) {
	onEachState(t, func(t *testing.T, state largo.State) {
		c := newClock()
		ctx := context.Background()
		server, started := New(Config{State: state, Now: c.now}), New(Config{State: state, Now: c.now})
		for _, ls := range []*Links{server, started} {
			if err := ls.Load(ctx); err != nil {
				t.Fatalf("Load with no key: %v", err)
			}
		}
		if _, err := state.Get(ctx, KeyName); !errors.Is(err, largo.ErrNotFound) {
			t.Fatalf("a share key was made before any link: %v", err)
		}
		// A request through a link that cannot be one yet.
		probe := sign([]byte(strings.Repeat("x", 32)), newID())
		lister := New(Config{State: state, Now: c.now})
		for _, ls := range []*Links{server, lister} {
			if _, err := ls.Verify(ctx, probe, ""); !errors.Is(err, ErrNoKey) {
				t.Fatalf("a token before any key: %v; want ErrNoKey", err)
			}
		}
		maker := New(Config{State: state, Now: c.now})
		tok, made, err := maker.Make(ctx, Link{Kind: Folder, Path: "pub", Expires: c.now().Add(time.Hour)}, "")
		if err != nil {
			t.Fatal(err)
		}
		if k, err := state.Get(ctx, KeyName); err != nil || len(k) < MinKey {
			t.Fatalf("the first link made no key: %d bytes, %v", len(k), err)
		}
		// A server that had not looked since it started verifies it at
		// once.
		if _, err := started.Verify(ctx, tok, ""); err != nil {
			t.Errorf("a server that had not looked since it started: %v", err)
		}
		// The one that looked a moment ago, within CacheTTL.
		c.add(CacheTTL - time.Second)
		if _, err := server.Verify(ctx, tok, ""); !errors.Is(err, ErrNoKey) {
			t.Errorf("within CacheTTL of a look that found none: %v; want ErrNoKey (no read)", err)
		}
		// The token of a link on record (a listing) reads the key now.
		if tk, err := lister.Token(ctx, &made); err != nil || tk != tok {
			t.Errorf("Token of the link made beside: %q, %v; want %q", tk, err, tok)
		}
		c.add(time.Second)
		l, err := server.Verify(ctx, tok, "")
		if err != nil || l.Path != "pub" {
			t.Fatalf("CacheTTL after the last look: %v, %v", l, err)
		}
	})
}

// TestKeyMakersAgree: makers of the first links at once, each with its
// own Links (processes, instances), agree on one key: every link works
// everywhere.
func TestKeyMakersAgree(t *testing.T) {
	onEachState(t, func(t *testing.T, state largo.State) {
		ctx := context.Background()
		const makers = 8
		tokens := make([]string, makers)
		errs := make([]error, makers)
		var wg sync.WaitGroup
		for i := range makers {
			wg.Go(func() {
				ls := New(Config{State: state})
				tokens[i], _, errs[i] = ls.Make(ctx, Link{Kind: File, Path: "f", Expires: time.Now().Add(time.Hour)}, "")
			})
		}
		wg.Wait()
		reader := New(Config{State: state})
		for i := range makers {
			if errs[i] != nil {
				t.Fatalf("maker %d: %v", i, errs[i])
			}
			if _, err := reader.Verify(ctx, tokens[i], ""); err != nil {
				t.Errorf("the link of maker %d: %v", i, err)
			}
		}
	})
}

// TestDamagedKey: a key too short to be one is an error that says so,
// at start (Load) and where a link is made; never a key made anew over
// it, which would revoke every link.
func TestDamagedKey(t *testing.T) {
	state := diskState(t)
	ctx := context.Background()
	if err := state.Put(ctx, KeyName, []byte("short")); err != nil {
		t.Fatal(err)
	}
	ls := New(Config{State: state})
	if err := ls.Load(ctx); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Load: %v", err)
	}
	if _, _, err := ls.Make(ctx, Link{Kind: Folder, Expires: time.Now().Add(time.Hour)}, ""); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("Make: %v", err)
	}
	if k, _ := state.Get(ctx, KeyName); string(k) != "short" {
		t.Errorf("the key was replaced: %q", k)
	}
}

// oldRecords writes, in the format the release before this package
// wrote them, a share key, a link with a password and a download limit,
// and its download count, and returns the link's token, made as that
// release made it.
func oldRecords(t *testing.T, state largo.State, expires time.Time) (id, token string) {
	t.Helper()
	ctx := context.Background()
	key := []byte("0123456789abcdef0123456789abcdef")
	id = "YW4gb2xkIGxpbmssIHYyLg"
	sum := func(msg string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	token = "v2." + id + "." + base64.RawURLEncoding.EncodeToString(sum("v2."+id))
	password := hexOf(sum("password\x00" + id + "\x00" + "open sesame"))
	record := `{"id":"` + id + `","kind":"file","path":"docs/a.txt","maker":"alice","created":"2025-01-01T00:00:00Z","expires":"` +
		expires.UTC().Format(time.RFC3339) + `","password":"` + password + `","max_rate":1000,"max_downloads":3}`
	for key, b := range map[string]string{KeyName: string(key), "links/" + id: record, "downloads/" + id: `{"used":2,"bytes":10}`} {
		if err := state.Put(ctx, key, []byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	return id, token
}

func hexOf(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestOldRecords: the key, links and download counts written by the
// release before keep working: the token verifies, the password is
// checked, the count goes on from where it was.
func TestOldRecords(t *testing.T) {
	onEachState(t, func(t *testing.T, state largo.State) {
		ctx := context.Background()
		id, token := oldRecords(t, state, time.Now().Add(time.Hour))
		ls := New(Config{State: state})
		if _, err := ls.Verify(ctx, token, ""); !errors.Is(err, ErrPassword) {
			t.Errorf("without its password: %v", err)
		}
		l, err := ls.Verify(ctx, token, "open sesame")
		if err != nil {
			t.Fatal(err)
		}
		if l.Kind != File || l.Path != "docs/a.txt" || l.Maker != "alice" || l.MaxRate != 1000 || l.MaxDownloads != 3 {
			t.Errorf("record read as %+v", l)
		}
		if c, err := ls.Downloads(ctx, id); err != nil || c.Used != 2 || c.Bytes != 10 {
			t.Errorf("its count: %+v, %v", c, err)
		}
		done, err := ls.Begin(ctx, l, 100, 100)
		if err != nil {
			t.Fatal(err)
		}
		if err := done(ctx, 90, true); err != nil {
			t.Fatal(err)
		}
		if _, err := ls.Begin(ctx, l, 100, 100); !errors.Is(err, ErrUsedUp) {
			t.Errorf("after the third download: %v; want ErrUsedUp", err)
		}
		if tk, err := ls.Token(ctx, l); err != nil || tk != token {
			t.Errorf("its token made again: %q, %v; want %q", tk, err, token)
		}
	})
}
