package gate

import (
	"context"
	"errors"
	"io"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"largo"
	"largo/auth"
	"largo/disk"
	"largo/links"
)

const policyFile = `
[[user]]
name = "alice"
tokens = ["alice-token-0123456789"]

[[user]]
name = "bob"
tokens = ["bob-token-0123456789"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/private"
users = ["*"]
allow = []

[[rule]]
path = "/private"
users = ["alice"]
allow = ["all"]

[[rule]]
path = "/docs/NOTES"
users = ["*"]
allow = []

[[rule]]
path = "/inbox"
users = ["bob"]
allow = ["write"]

[[rule]]
path = "/pub"
users = ["bob"]
allow = ["all"]

[[rule]]
path = "/pub/sealed"
users = ["bob"]
allow = ["read", "list"]
`

// fixture is a folder behind a gate of policyFile, with a clock.
type fixture struct {
	dir   string
	disk  *disk.Store
	gate  *Gate
	store *Store
	now   time.Time
}

func newFixture(t *testing.T, mode Symlinks) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), now: time.Unix(2e9, 0)}
	for name, body := range map[string]string{
		"pub/a.txt": "a", "pub/sealed/s.txt": "s", "private/secret.txt": "secret",
		"docs/NOTES": "n", "docs/NOTES.gz": "gz", "inbox/old.txt": "o", "top.txt": "t",
	} {
		p := filepath.Join(f.dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	for link, to := range map[string]string{"pub/priv": "../private", "pub/state": "../.largo", "pub/here": "a.txt"} {
		if err := os.Symlink(to, filepath.Join(f.dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(t.TempDir(), "access.toml")
	os.WriteFile(p, []byte(policyFile), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if f.disk, err = disk.Open(f.dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.disk.Close() })
	clock := func() time.Time { return f.now }
	f.gate = New(Config{
		Access:        auth.New(pol, clock),
		Links:         links.New(links.Config{State: f.disk.State(), Key: []byte(strings.Repeat("k", 32)), Now: clock}),
		Resolver:      f.disk,
		Symlinks:      mode,
		LinkMaxUpload: 100,
	})
	f.store = f.gate.Store(f.disk)
	return f
}

func as(p Principal) context.Context { return With(context.Background(), p) }

// code names a decision: "ok", "401", "403" or "404".
func code(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, largo.ErrUnauthorized):
		return "401"
	case errors.Is(err, largo.ErrPermission):
		return "403"
	case errors.Is(err, largo.ErrNotFound):
		return "404"
	}
	return err.Error()
}

func TestCheck(t *testing.T) {
	f := newFixture(t, Within)
	ctx := context.Background()
	folder, _, err := f.gate.Links().Make(ctx, links.Link{Kind: links.Folder, Path: "private", Maker: "alice", Expires: f.now.Add(time.Hour)}, "")
	if err != nil {
		t.Fatal(err)
	}
	drop, _, _ := f.gate.Links().Make(ctx, links.Link{Kind: links.Drop, Path: "inbox", Maker: "bob", Expires: f.now.Add(time.Hour)}, "")
	idOf := func(token string) string { id, _ := links.ID(token); return id }
	anon, alice, bob := Anonymous(), User("alice"), User("bob")
	folderLink, dropLink := LinkHolder(idOf(folder)), LinkHolder(idOf(drop))
	for _, tt := range []struct {
		who  Principal
		perm auth.Perm
		name string
		tree bool
		want string
	}{
		{anon, auth.Read, "pub/a.txt", false, "ok"},
		{anon, auth.Read, "private/secret.txt", false, "401"},
		{anon, auth.Read, "private/missing.txt", false, "401"}, // the same whether it exists
		{bob, auth.Read, "private/secret.txt", false, "403"},
		{alice, auth.Read | auth.Delete, "private/secret.txt", false, "ok"},
		{anon, 0, "private", false, "401"},
		{anon, 0, "pub", false, "ok"},
		{anon, auth.Read, ".largo/share.key", false, "404"},
		{Server(), auth.Read, ".largo/share.key", false, "ok"},
		{alice, auth.Read, "_largo/metrics", false, "404"},
		// The sidecar rule, whatever NOTES's type.
		{anon, auth.Read, "docs/NOTES.gz", false, "401"},
		{anon, auth.Read, "docs/other.gz", false, "ok"},
		// Trees: a rule below takes a permission away.
		{bob, auth.Delete, "pub", true, "403"},
		{bob, auth.Delete, "pub", false, "ok"},
		{bob, auth.Write, "inbox/new.txt", false, "ok"},
		{bob, auth.Read, "inbox/new.txt", false, "403"},
		// Links: their scope, within what their maker may do.
		{folderLink, auth.Read, "private/secret.txt", false, "ok"},
		{folderLink, auth.Read | auth.List, "private", true, "ok"},
		{folderLink, auth.Write, "private/x", false, "403"},
		{folderLink, auth.Read, "pub/a.txt", false, "403"},
		{dropLink, auth.Write, "inbox/new.txt", false, "ok"},
		{dropLink, 0, "inbox", false, "ok"},
		{dropLink, auth.Write, "inbox/sub/new.txt", false, "403"},
		{dropLink, auth.Read, "inbox/old.txt", false, "403"},
		{LinkHolder("AAAAAAAAAAAAAAAAAAAAAA"), auth.Read, "pub/a.txt", false, "403"},
		// Symbolic links: judged where they lead too.
		{anon, auth.Read, "pub/priv/secret.txt", false, "404"}, // within: across the tree
		{anon, auth.Read, "pub/state/share.key", false, "404"},
		{anon, auth.Read, "pub/here", false, "ok"},
		{bob, auth.Write, "pub/priv/planted.txt", false, "404"},
	} {
		if got := code(checkAs(f.gate, ctx, tt.who, tt.perm, tt.name, tt.tree)); got != tt.want {
			t.Errorf("%v %v %s (tree %v): %s; want %s", tt.who, tt.perm, tt.name, tt.tree, got, tt.want)
		}
	}
	if err := f.gate.Check(ctx, auth.Read, "pub/a.txt", false); err == nil {
		t.Error("a call without a principal was let through")
	}
}

// TestLinksFollowTheirMaker: a reload that takes a right from a link's
// maker takes it from the link; a removed maker's link grants nothing;
// an expired or revoked one neither.
func TestLinksFollowTheirMaker(t *testing.T) {
	f := newFixture(t, Within)
	ctx := context.Background()
	tok, l, _ := f.gate.Links().Make(ctx, links.Link{Kind: links.Folder, Path: "private", Maker: "alice", Expires: f.now.Add(time.Hour)}, "")
	holder := LinkHolder(l.ID)
	read := func() string { return code(checkAs(f.gate, ctx, holder, auth.Read, "private/secret.txt", false)) }
	if got := read(); got != "ok" {
		t.Fatalf("a fresh link: %s", got)
	}
	p := filepath.Join(t.TempDir(), "access.toml")
	old := f.gate.Access().Policy()
	// alice removed (her rule given to carol): her link grants nothing.
	os.WriteFile(p, []byte(strings.ReplaceAll(policyFile, `"alice"`, `"carol"`)), 0o600)
	gone, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	_, pub, _ := f.gate.Links().Make(ctx, links.Link{Kind: links.Folder, Path: "pub", Maker: "alice", Expires: f.now.Add(time.Hour)}, "")
	f.gate.Access().Reload(gone)
	if got := read(); got != "403" {
		t.Errorf("after its maker was removed: %s", got)
	}
	// Though everyone may read /pub, a removed user's link to it is dead.
	if got := code(checkAs(f.gate, ctx, LinkHolder(pub.ID), auth.Read, "pub/a.txt", false)); got != "403" {
		t.Errorf("a link to what everyone reads, of a removed maker: %s", got)
	}
	os.WriteFile(p, []byte(strings.Replace(policyFile, "users = [\"alice\"]\nallow = [\"all\"]", "users = [\"alice\"]\nallow = []", 1)), 0o600)
	pol, err := auth.LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	f.gate.Access().Reload(pol)
	if got := read(); got != "403" {
		t.Errorf("after the maker lost the right: %s", got)
	}
	f.gate.Access().Reload(old)
	if got := read(); got != "ok" {
		t.Errorf("after the maker got it back: %s", got)
	}
	f.now = f.now.Add(2 * time.Hour)
	if got := read(); got != "403" {
		t.Errorf("expired: %s", got)
	}
	f.now = f.now.Add(-2 * time.Hour)
	if _, err := f.gate.Links().Verify(ctx, tok, ""); err != nil {
		t.Fatal(err)
	}
	if err := f.gate.Links().Revoke(ctx, l.ID, "bob", false); err == nil {
		t.Error("bob revoked alice's link")
	}
	if err := f.gate.Links().Revoke(ctx, l.ID, "alice", false); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "403" {
		t.Errorf("revoked: %s", got)
	}
	if _, err := f.gate.Links().Verify(ctx, tok, ""); !errors.Is(err, links.ErrRevoked) {
		t.Errorf("Verify of a revoked link: %v", err)
	}
}

func TestSymlinkModes(t *testing.T) {
	for mode, want := range map[Symlinks][2]string{
		Follow: {"ok", "ok"},  // pub/priv for alice, pub/here for anyone
		Within: {"404", "ok"}, // a link across the tree is not followed
		None:   {"404", "404"},
	} {
		f := newFixture(t, mode)
		ctx := context.Background()
		got := [2]string{
			code(checkAs(f.gate, ctx, User("alice"), auth.Read, "pub/priv/secret.txt", false)),
			code(checkAs(f.gate, ctx, Anonymous(), auth.Read, "pub/here", false)),
		}
		if got != want {
			t.Errorf("%v: %v; want %v", mode, got, want)
		}
		// Whatever the mode: the stricter of the two names, and never the
		// state area.
		if got := code(checkAs(f.gate, ctx, Anonymous(), auth.Read, "pub/priv/secret.txt", false)); got == "ok" {
			t.Errorf("%v: anonymous read through a link into /private", mode)
		}
		if got := code(checkAs(f.gate, ctx, User("alice"), auth.Read, "pub/state/share.key", false)); got == "ok" {
			t.Errorf("%v: a read through a link into the state area", mode)
		}
	}
}

// TestStore: every call is decided; listings are filtered; a drop box
// only creates, and is capped.
func TestStore(t *testing.T) {
	f := newFixture(t, Within)
	ctx := context.Background()
	if _, err := f.store.Stat(ctx, "pub/a.txt"); err == nil {
		t.Error("a Stat without a principal")
	}
	if _, err := f.store.Open(as(Anonymous()), "private/secret.txt"); code(err) != "401" {
		t.Errorf("Open of a hidden file: %v", err)
	}
	var names []string
	for in, err := range f.store.List(as(Anonymous()), "pub") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, in.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "a.txt,here,sealed" {
		t.Errorf("anonymous listing of pub: %v", names)
	}
	// bob may write /pub but not /pub/sealed, nor through the link.
	bob := as(User("bob"))
	for _, name := range []string{"pub/sealed/x", "pub/priv/x", "private/x"} {
		if _, err := f.store.Create(bob, name, largo.CreateOptions{Size: 1}); err == nil {
			t.Errorf("bob created %s", name)
		}
	}
	if err := f.store.Rename(bob, "pub/a.txt", "pub/sealed/a.txt"); err == nil {
		t.Error("bob moved a file into /pub/sealed")
	}
	if err := f.store.Remove(bob, "pub", largo.RemoveOptions{Recursive: true}); code(err) != "403" {
		t.Errorf("bob removed /pub with /pub/sealed in it: %v", err)
	}
	if _, err := f.store.Create(bob, "pub/evil\u202etxt.exe", largo.CreateOptions{Size: 1}); !errors.Is(err, largo.ErrUnsafeName) {
		t.Errorf("a name with a bidi override: %v", err)
	}
	// A drop box.
	_, l, _ := f.gate.Links().Make(ctx, links.Link{Kind: links.Drop, Path: "inbox", Maker: "bob", Expires: f.now.Add(time.Hour), MaxUpload: 1000}, "")
	dctx := as(LinkHolder(l.ID))
	if _, err := f.store.Create(dctx, "inbox/big", largo.CreateOptions{Size: 101}); !errors.Is(err, largo.ErrTooLarge) {
		t.Errorf("over the cap (the smaller of the link's and the server's): %v", err)
	}
	u, err := f.store.Create(dctx, "inbox/old.txt", largo.CreateOptions{Size: 3})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(u, "new")
	if _, _, err := u.Commit(dctx, largo.Condition{}); !errors.Is(err, largo.ErrPrecondition) {
		t.Errorf("a drop box replaced a file: %v", err)
	}
	u, err = f.store.Create(dctx, "inbox/trickle", largo.CreateOptions{Size: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write(make([]byte, 101)); !errors.Is(err, largo.ErrTooLarge) {
		t.Errorf("a body over the cap: %v", err)
	}
	u.Abort()
	if err := f.store.MakeDir(dctx, "inbox/sub"); !errors.Is(err, largo.ErrCreateOnly) {
		t.Errorf("a drop box made a folder: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "inbox/old.txt")); string(b) != "o" {
		t.Errorf("inbox/old.txt is %q", b)
	}
}

// TestStoreLacksCapability: a capability the wrapped store lacks fails,
// after the decision, as the store's own refusal would.
func TestStoreLacksCapability(t *testing.T) {
	f := newFixture(t, Follow)
	s := f.gate.Store(readOnly{f.disk})
	ctx := as(User("alice"))
	if _, err := s.Create(ctx, "private/x", largo.CreateOptions{}); !errors.Is(err, largo.ErrUnsupported) {
		t.Errorf("Create on a store that cannot: %v", err)
	}
	if err := s.Rename(ctx, "private/secret.txt", "private/y"); !errors.Is(err, largo.ErrUnsupported) {
		t.Errorf("Rename on a store that cannot: %v", err)
	}
	if _, err := s.Create(as(Anonymous()), "private/x", largo.CreateOptions{}); code(err) != "401" {
		t.Errorf("the decision comes first: %v", err)
	}
	if !Has[largo.Renamer](f.store) || Has[largo.Renamer](s) {
		t.Error("Has does not tell what the wrapped store offers")
	}
}

// readOnly is a store with none of the write capabilities.
type readOnly struct{ s largo.Store }

func (r readOnly) Stat(ctx context.Context, name string) (largo.Info, error) {
	return r.s.Stat(ctx, name)
}
func (r readOnly) Open(ctx context.Context, name string) (largo.File, error) {
	return r.s.Open(ctx, name)
}
func (r readOnly) List(ctx context.Context, name string) iter.Seq2[largo.Info, error] {
	return r.s.List(ctx, name)
}

func TestPrincipalText(t *testing.T) {
	for _, p := range []Principal{Anonymous(), User("alice"), LinkHolder("AAAA"), Server()} {
		if q, ok := Parse(p.String()); !ok || q != p {
			t.Errorf("Parse(%q) = %v, %v", p.String(), q, ok)
		}
	}
	if _, ok := Parse("root"); ok {
		t.Error("Parse took what String never writes")
	}
}

// TestOpenThroughLinks: an open judges where the file it opened really
// is, from the file itself when it can tell, and closes it unread when
// that refuses it.
func TestOpenThroughLinks(t *testing.T) {
	for mode, want := range map[Symlinks]map[string]string{
		Follow: {"pub/priv/secret.txt": "ok", "pub/state/share.key": "404", "pub/here": "ok", "pub/a.txt": "ok"},
		Within: {"pub/priv/secret.txt": "404", "pub/state/share.key": "404", "pub/here": "ok", "pub/a.txt": "ok"},
		None:   {"pub/priv/secret.txt": "404", "pub/state/share.key": "404", "pub/here": "404", "pub/a.txt": "ok"},
	} {
		f := newFixture(t, mode)
		os.MkdirAll(filepath.Join(f.dir, ".largo"), 0o700)
		os.WriteFile(filepath.Join(f.dir, ".largo", "share.key"), []byte("key"), 0o600)
		for name, w := range want {
			file, err := f.store.Open(as(User("alice")), name)
			if file != nil {
				file.Close()
			}
			if got := code(err); got != w {
				t.Errorf("%v: alice opens %s: %s; want %s", mode, name, got, w)
			}
		}
		// Bob may read /pub but not /private: the stricter of the two.
		if _, err := f.store.Open(as(User("bob")), "pub/priv/secret.txt"); err == nil {
			t.Errorf("%v: bob read /private through a link", mode)
		}
	}
}

// checkAs is Gate.Check for the principal p.
func checkAs(g *Gate, ctx context.Context, p Principal, perm auth.Perm, name string, tree bool) error {
	return g.Check(With(ctx, p), perm, name, tree)
}
