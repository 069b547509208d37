package dav

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/webdav"

	"largo"
	"largo/gate"
)

// lockAs takes a lock of Depth 0 on url for user and returns its token.
func lockAs(t *testing.T, url, user string) string {
	t.Helper()
	req := newRequest(t, "LOCK", url, lockBody, "Depth", "0", userHeader, user)
	resp := send(t, req)
	tok := strings.Trim(resp.Header.Get("Lock-Token"), "<>")
	if resp.StatusCode != 200 && resp.StatusCode != 201 || tok == "" {
		t.Fatalf("LOCK %s as %s: %d, Lock-Token %q", url, user, resp.StatusCode, tok)
	}
	return tok
}

// TestLockHolder: a lock is of use to the principal that took it alone.
// Another's token lets none of their changes through (423, as without a
// token), and neither refreshes nor removes the lock (403); the holder's
// own still does all of it.
func TestLockHolder(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"doc.txt", "other.txt", "box/in.txt"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	srv, _, locks := newServer(t, dir)
	tok := lockAs(t, srv.URL+"/doc.txt", "alice")
	dirTok := lockAs(t, srv.URL+"/box", "alice")
	patch := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><Z:x xmlns:Z="urn:t">1</Z:x></D:prop></D:set></D:propertyupdate>`
	ifTok := "(<" + tok + ">)"
	for _, tc := range []struct {
		what         string
		method, path string
		body         string
		hdr          []string
		code         int
		reason       string
	}{
		{"PROPPATCH with another's token", "PROPPATCH", "/doc.txt", patch, []string{"If", ifTok}, 423, "locked"},
		{"PROPPATCH with another's token tagged", "PROPPATCH", "/doc.txt", patch, []string{"If", "<" + srv.URL + "/doc.txt> " + ifTok}, 423, "locked"},
		{"MOVE with another's token", "MOVE", "/doc.txt", "", []string{"If", ifTok, "Destination", "/moved.txt"}, 423, "locked"},
		{"COPY onto it with another's token", "COPY", "/other.txt", "", []string{"If", ifTok, "Destination", "/doc.txt"}, 423, "locked"},
		{"refresh with another's token", "LOCK", "/doc.txt", "", []string{"If", ifTok}, 403, "only its holder"},
		{"UNLOCK with another's token", "UNLOCK", "/doc.txt", "", []string{"Lock-Token", "<" + tok + ">"}, 403, "only its holder"},
		{"MKCOL below a lock of Depth 0, with its token: as without", "MKCOL", "/box/sub", "", []string{"If", "(<" + dirTok + ">)"}, 201, ""},
	} {
		req := newRequest(t, tc.method, srv.URL+tc.path, tc.body, append([]string{userHeader, "bob"}, tc.hdr...)...)
		resp := send(t, req)
		if resp.StatusCode != tc.code || !strings.Contains(resp.text, tc.reason) {
			t.Errorf("%s: %d %q; want %d %q", tc.what, resp.StatusCode, resp.text, tc.code, tc.reason)
		}
	}
	// The write pipeline's look, which PUT, forms, DELETE and the
	// uploads make: bob's is refused with alice's token as without it.
	bob := gate.With(context.Background(), gate.User("bob"))
	alice := gate.With(context.Background(), gate.User("alice"))
	for _, tokens := range [][]string{nil, {tok}} {
		if err := locks.Locked(bob, "doc.txt", false, tokens); !errors.Is(err, largo.ErrLocked) {
			t.Errorf("bob's write with tokens %v: %v; want ErrLocked", tokens, err)
		}
	}
	if err := locks.Locked(bob, "other.txt", false, []string{tok}); err != nil {
		t.Errorf("bob's write of a file no one locked, with alice's token: %v; want it through, as without a token", err)
	}
	if err := locks.Locked(context.Background(), "doc.txt", false, []string{tok}); !errors.Is(err, largo.ErrLocked) {
		t.Errorf("a write without a principal, with the token: %v; want ErrLocked", err)
	}
	if err := locks.Locked(alice, "doc.txt", false, []string{tok}); err != nil {
		t.Errorf("alice's write with her token: %v", err)
	}
	if err := locks.Locked(alice, "other.txt", false, []string{"opaquelocktoken:none/_x"}); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("a write with an unknown token: %v; want ErrPrecondition", err)
	}
	// The lock is as alice left it, and hers to use.
	if l, err := locks.byToken(alice, tok); err != nil || l.Holder != "user:alice" {
		t.Fatalf("alice's lock: %+v, %v", l, err)
	}
	for _, tc := range []struct {
		method, path, body string
		hdr                []string
		code               int
	}{
		{"PROPPATCH", "/doc.txt", patch, []string{"If", ifTok}, 207},
		{"LOCK", "/doc.txt", "", []string{"If", ifTok, "Timeout", "Second-60"}, 200},
		{"UNLOCK", "/doc.txt", "", []string{"Lock-Token", "<" + tok + ">"}, 204},
	} {
		req := newRequest(t, tc.method, srv.URL+tc.path, tc.body, append([]string{userHeader, "alice"}, tc.hdr...)...)
		if resp := send(t, req); resp.StatusCode != tc.code {
			t.Errorf("alice's %s with her token: %d %s; want %d", tc.method, resp.StatusCode, resp.text, tc.code)
		}
	}
	// A lock without a principal is refused.
	if _, err := locks.create(context.Background(), locks.now(), "free.txt", webdav.LockDetails{ZeroDepth: true}); !errors.Is(err, largo.ErrPermission) {
		t.Errorf("a lock without a principal: %v; want ErrPermission", err)
	}
}
