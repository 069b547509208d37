package dav

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/webdav"

	"largo"
	"largo/gate"
	"largo/internal/teststore"
	"largo/record"
)

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func lockKey(name string) string { return lockPrefix + escape(name) }

func newTestLocks(t *testing.T) (*Locks, *Locks, *clock) {
	t.Helper()
	return locksOn(t, teststore.Disk(t).State())
}

// locksOn returns two instances' locks on st.
func locksOn(t *testing.T, st largo.State) (*Locks, *Locks, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a, err := NewLocks(st, c.now)
	if err != nil {
		t.Fatal(err)
	}
	// A second instance on the same state area: a replica.
	b, err := NewLocks(st, c.now)
	if err != nil {
		t.Fatal(err)
	}
	return a, b, c
}

// onEachState runs f on a folder's state area, then on a bucket's of a
// real S3 server.
func onEachState(t *testing.T, f func(t *testing.T, st largo.State)) {
	teststore.Each(t, func(t *testing.T, st teststore.Store) { f(t, st.State()) })
}

// asTester is a context of the principal the lock tests act for.
func asTester() context.Context { return gate.With(context.Background(), gate.User("tester")) }

func TestLocks(t *testing.T) {
	ctx := asTester()
	a, b, c := newTestLocks(t)
	ra, rb := &requestLocks{Locks: a, ctx: ctx}, &requestLocks{Locks: b, ctx: ctx}
	tok, err := ra.Create(c.t, webdav.LockDetails{Root: "/dir", Duration: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if name, ok := tokenName(tok); !ok || name != "dir" {
		t.Errorf("token %q names %q", tok, name)
	}
	for _, root := range []string{"/dir", "/dir/file", "/"} {
		if _, err := rb.Create(c.t, webdav.LockDetails{Root: root, Duration: time.Minute, ZeroDepth: root != "/"}); err != webdav.ErrLocked {
			t.Errorf("the replica's lock on %s under a depth-infinity lock on /dir: %v; want ErrLocked", root, err)
		}
	}
	if _, err := rb.Create(c.t, webdav.LockDetails{Root: "/dirt", Duration: time.Minute, ZeroDepth: true}); err != nil {
		t.Errorf("a lock on a sibling: %v", err)
	}
	for _, tc := range []struct {
		name   string
		tree   bool
		tokens []string
		want   error
	}{
		{"dir/deep/file", false, nil, largo.ErrLocked},
		{"dir/deep/file", false, []string{tok}, nil},
		{"other", false, nil, nil},
		{"", true, nil, largo.ErrLocked},
		{"", true, []string{tok}, largo.ErrLocked}, // /dirt is locked too
		{"other", false, []string{"opaquelocktoken:nothing"}, largo.ErrPrecondition},
	} {
		err := b.Locked(ctx, tc.name, tc.tree, tc.tokens)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Locked(%q, tree %v, %v) = %v; want %v", tc.name, tc.tree, tc.tokens, err, tc.want)
		}
	}
	if _, err := rb.Confirm(c.t, "/dir/x", "", webdav.Condition{Token: tok}); err != nil {
		t.Errorf("confirm under the lock: %v", err)
	}
	if _, err := rb.Confirm(c.t, "/dir/x", "/other", webdav.Condition{Token: tok}); err != nil {
		t.Errorf("confirm of a move out of the lock to a name no one locked: %v", err)
	}
	if _, err := rb.Confirm(c.t, "/dir/x", "/dirt", webdav.Condition{Token: tok}); err != webdav.ErrConfirmationFailed || !errors.Is(rb.failed, largo.ErrLocked) {
		t.Errorf("confirm of a move onto a name another lock holds: %v, %v; want ErrConfirmationFailed, told as ErrLocked", err, rb.failed)
	}
	if _, err := rb.Confirm(c.t, "/other", "", webdav.Condition{Token: "opaquelocktoken:none"}); err != webdav.ErrConfirmationFailed {
		t.Errorf("confirm with no live token: %v", err)
	}
	if _, err := rb.Refresh(c.t, tok, 2*time.Minute); err != nil {
		t.Errorf("Refresh through the replica: %v", err)
	}
	c.t = c.t.Add(90 * time.Second) // past the first timeout, within the refreshed one
	if err := b.Locked(ctx, "dir/file", false, nil); !errors.Is(err, largo.ErrLocked) {
		t.Errorf("after the refresh: %v; want still locked", err)
	}
	if err := rb.Unlock(c.t, tok+"x"); err != webdav.ErrNoSuchLock {
		t.Errorf("Unlock with a wrong token: %v", err)
	}
	c.t = c.t.Add(time.Hour)
	if err := b.Locked(ctx, "dir/file", false, nil); err != nil {
		t.Errorf("after expiry: %v; want unlocked", err)
	}
	tok2, err := rb.Create(c.t, webdav.LockDetails{Root: "/dir", Duration: -1})
	if err != nil {
		t.Fatalf("a lock where one expired: %v", err)
	}
	l, err := a.byToken(ctx, tok2)
	if err != nil || l.Expires.Sub(c.t) != MaxTimeout {
		t.Errorf("an infinite lock lasts %v; want MaxTimeout", l.Expires.Sub(c.t))
	}
	if err := ra.Unlock(c.t, tok2); err != nil {
		t.Errorf("Unlock through the other instance: %v", err)
	}
	if err := b.Locked(ctx, "dir", false, nil); err != nil {
		t.Errorf("after Unlock: %v", err)
	}
}

func TestEscape(t *testing.T) {
	for _, name := range []string{"", "a", "a/b c", "a%2Fb", "_x/_y", "ü/ñ"} {
		got, err := unescape(escape(name))
		if err != nil || got != name {
			t.Errorf("unescape(escape(%q)) = %q, %v", name, got, err)
		}
	}
	// The records below a folder share a prefix no sibling's record has.
	if p := belowPrefix(lockPrefix, "a"); len(lockKey("ab")) >= len(p) && lockKey("ab")[:len(p)] == p {
		t.Errorf("the record of ab is under a's prefix %s", p)
	}
}

// TestLockTakeover: instances taking over one expired lock at once: one
// gets it, the others are refused, and the record is the winner's.
func TestLockTakeover(t *testing.T) {
	onEachState(t, testLockTakeover)
}

func testLockTakeover(t *testing.T, st largo.State) {
	ctx := asTester()
	a, b, c := locksOn(t, st)
	if _, err := a.create(ctx, c.t, "f", webdav.LockDetails{Duration: time.Minute, ZeroDepth: true}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	for round := range 10 {
		c.t = c.t.Add(2 * MaxTimeout) // the lock expired
		now := c.t
		tokens := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			ls := []*Locks{a, b}[i%2]
			wg.Go(func() {
				tokens[i], errs[i] = ls.create(ctx, now, "f", webdav.LockDetails{Duration: time.Minute, ZeroDepth: true})
			})
		}
		wg.Wait()
		var won []string
		for i, err := range errs {
			switch {
			case err == nil:
				won = append(won, tokens[i])
			case !errors.Is(err, webdav.ErrLocked):
				t.Errorf("round %d: take %d: %v; want ErrLocked", round, i, err)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d instances took the lock; want 1", round, len(won))
		}
		if l, err := a.get(ctx, "f"); err != nil || l == nil || l.Token != won[0] {
			t.Fatalf("round %d: the record is %+v, %v; want the winner's lock", round, l, err)
		}
	}
}

// TestLockRefreshUnlockRace: a refresh or an UNLOCK that read a lock
// before it expired and was taken by another neither extends nor
// removes the new holder's lock.
func TestLockRefreshUnlockRace(t *testing.T) {
	ctx := asTester()
	a, b, c := newTestLocks(t)
	// A refresh and an UNLOCK of the old holder that read its record
	// before another took it over, once it expired: the takeover comes
	// between their read and their write.
	var old, tok string
	for _, change := range []func(old string) func(*lock, bool) (record.Change, error){
		func(old string) func(*lock, bool) (record.Change, error) {
			return a.extending(holder(ctx), old, c.t, time.Minute)
		},
		func(old string) func(*lock, bool) (record.Change, error) { return a.removing(holder(ctx), old) },
	} {
		c.t = c.t.Add(2 * MaxTimeout)
		var err error
		if old, err = a.create(ctx, c.t, "f", webdav.LockDetails{Duration: time.Minute, ZeroDepth: true}); err != nil {
			t.Fatal(err)
		}
		first := true
		_, err = a.change(ctx, old, func(l *lock, exists bool) (record.Change, error) {
			ch, err := change(old)(l, exists)
			if first {
				first = false
				c.t = c.t.Add(2 * MaxTimeout)
				var terr error
				if tok, terr = b.create(ctx, c.t, "f", webdav.LockDetails{Duration: time.Minute, ZeroDepth: true}); terr != nil {
					t.Fatal(terr)
				}
			}
			return ch, err
		})
		if !errors.Is(err, webdav.ErrNoSuchLock) {
			t.Errorf("a change of the old lock read before the takeover: %v; want ErrNoSuchLock", err)
		}
		if l, err := a.get(ctx, "f"); err != nil || l == nil || l.Token != tok {
			t.Errorf("the new lock is %+v, %v; want it kept", l, err)
		}
	}
	if err := a.unlock(ctx, old); !errors.Is(err, webdav.ErrNoSuchLock) {
		t.Errorf("UNLOCK of the expired token: %v; want ErrNoSuchLock", err)
	}
	if _, err := a.refresh(ctx, c.t, old, time.Minute); !errors.Is(err, webdav.ErrNoSuchLock) {
		t.Errorf("refresh of the expired token: %v; want ErrNoSuchLock", err)
	}
	if l, err := a.get(ctx, "f"); err != nil || l == nil || l.Token != tok {
		t.Errorf("the new lock is %+v, %v; want it kept", l, err)
	}
}

// TestLockRefreshesRace: refreshes of one lock by its holder through two
// instances at once all extend it (none is taken for a lost lock), and
// the last one's time is what the record keeps.
func TestLockRefreshesRace(t *testing.T) {
	onEachState(t, func(t *testing.T, st largo.State) {
		ctx := asTester()
		a, b, c := locksOn(t, st)
		tok, err := a.create(ctx, c.t, "f", webdav.LockDetails{Duration: time.Minute, ZeroDepth: true})
		if err != nil {
			t.Fatal(err)
		}
		const n = 6
		for round := range 5 {
			now := c.t
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				ls := []*Locks{a, b}[i%2]
				wg.Go(func() {
					_, errs[i] = ls.refresh(ctx, now, tok, time.Duration(10+round)*time.Minute)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("round %d: refresh %d: %v", round, i, err)
				}
			}
			l, err := b.get(ctx, "f")
			if err != nil || l == nil || l.Token != tok || !l.Expires.Equal(now.Add(time.Duration(10+round)*time.Minute)) {
				t.Fatalf("round %d: the lock is %+v, %v; want it extended", round, l, err)
			}
		}
	})
}

// TestLockSweep: the sweep removes the expired lock records, and only
// them.
func TestLockSweep(t *testing.T) {
	ctx := asTester()
	a, _, c := newTestLocks(t)
	for _, d := range []webdav.LockDetails{{Root: "/old", Duration: time.Minute}, {Root: "/dir/old", Duration: time.Minute}, {Root: "/new", Duration: time.Hour}} {
		if _, err := a.create(ctx, c.t, clean(d.Root), d); err != nil {
			t.Fatal(err)
		}
	}
	// A record that cannot be read does not keep the others from going.
	if err := a.st.Put(ctx, lockKey("broken"), []byte("{")); err != nil {
		t.Fatal(err)
	}
	c.t = c.t.Add(2 * time.Minute)
	n, err := a.Sweep(ctx)
	if err != nil || n != 2 {
		t.Errorf("Sweep = %d, %v; want 2", n, err)
	}
	var keys []string
	for rec, err := range a.st.List(ctx, lockPrefix) {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, rec.Key)
	}
	slices.Sort(keys)
	if want := []string{lockKey("broken"), lockKey("new")}; !slices.Equal(keys, want) {
		t.Errorf("lock records after the sweep: %v; want %v", keys, want)
	}
}
