package dav

import (
	"context"
	"errors"
	"testing"
	"time"

	"golang.org/x/net/webdav"

	"largo"
	"largo/disk"
	"largo/ingest"
)

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestLocks(t *testing.T) (*Locks, *Locks, *clock) {
	t.Helper()
	s, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a, err := NewLocks(s.State(), c.now)
	if err != nil {
		t.Fatal(err)
	}
	// A second instance on the same state area: a replica.
	b, err := NewLocks(s.State(), c.now)
	if err != nil {
		t.Fatal(err)
	}
	return a, b, c
}

func TestLocks(t *testing.T) {
	ctx := context.Background()
	a, b, c := newTestLocks(t)
	ra, rb := &requestLocks{Locks: a}, &requestLocks{Locks: b}
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
		{"dir/deep/file", false, nil, ingest.ErrLocked},
		{"dir/deep/file", false, []string{tok}, nil},
		{"other", false, nil, nil},
		{"", true, nil, ingest.ErrLocked},
		{"", true, []string{tok}, ingest.ErrLocked}, // /dirt is locked too
		{"other", false, []string{"opaquelocktoken:nothing"}, largo.ErrPrecondition},
	} {
		err := b.Locked(ctx, tc.name, tc.tree, tc.tokens)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Locked(%q, tree %v, %v) = %v; want %v", tc.name, tc.tree, tc.tokens, err, tc.want)
		}
	}
	if err := rb.confirm(ctx, []string{"/dir/x", ""}, []webdav.Condition{{Token: tok}}); err != nil {
		t.Errorf("confirm under the lock: %v", err)
	}
	if err := rb.confirm(ctx, []string{"/dir/x", "/other"}, []webdav.Condition{{Token: tok}}); err != nil {
		t.Errorf("confirm of a move out of the lock to a name no one locked: %v", err)
	}
	if err := rb.confirm(ctx, []string{"/dir/x", "/dirt"}, []webdav.Condition{{Token: tok}}); err != webdav.ErrConfirmationFailed {
		t.Errorf("confirm of a move onto a name another lock holds: %v", err)
	}
	if err := rb.confirm(ctx, []string{"/other"}, []webdav.Condition{{Token: "opaquelocktoken:none"}}); err != webdav.ErrConfirmationFailed {
		t.Errorf("confirm with no live token: %v", err)
	}
	if _, err := rb.Refresh(c.t, tok, 2*time.Minute); err != nil {
		t.Errorf("Refresh through the replica: %v", err)
	}
	c.t = c.t.Add(90 * time.Second) // past the first timeout, within the refreshed one
	if err := b.Locked(ctx, "dir/file", false, nil); !errors.Is(err, ingest.ErrLocked) {
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
