package pageapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/links"
)

// TestPageManages: the page offers the file manager on the server's own
// pages, its new-folder button only where the gate lets its visitor make
// one, its links only to who is signed in; a share link's page offers
// none of it.
func TestPageManages(t *testing.T) {
	f := newAccessFixture(t)
	page := func(target, user string) string { return f.get(target, user).Body.String() }
	alice := page("/private/", "alice")
	for _, want := range []string{`data-may="/_largo/may"`, `data-move="/_largo/move"`, `data-mkdir="/_largo/mkdir"`, `data-search="/_largo/search"`, `data-links="/_largo/links/"`, `id="new-folder"`, `id="pick-all"`, `data-etag="`} {
		if !strings.Contains(alice, want) {
			t.Errorf("alice's page lacks %s", want)
		}
	}
	anon := page("/pub/", "")
	for _, absent := range []string{`id="new-folder"`, `data-mkdir="/`, `data-links="/`, `id="share-dialog"`} {
		if strings.Contains(anon, absent) {
			t.Errorf("an anonymous visitor's page has %s", absent)
		}
	}
	if !strings.Contains(anon, `id="pick-all"`) || !strings.Contains(anon, `data-archive="/_largo/archive"`) {
		t.Error("an anonymous reader cannot select files to download")
	}
	if strings.Contains(page("/pub/", "bob"), `id="new-folder"`) {
		t.Error("bob is offered a new folder in /pub")
	}
	link := f.link(t, links.Link{Path: "pub", Kind: links.Folder, Expires: f.now.Add(3600e9)}, "")
	shared := page(link, "")
	if strings.Contains(shared, `data-may=`) || strings.Contains(shared, `id="pick-all"`) || !strings.Contains(shared, `id="preview"`) {
		t.Error("a share link's page offers the file manager, or no preview")
	}
}

// TestPageSignedIn: the page says who is signed in and what they may do
// in its folder; an anonymous visitor of a server with users is offered
// to sign in and come back; a share link's visitor, or anyone on a server
// without users, is offered nothing.
func TestPageSignedIn(t *testing.T) {
	f := newAccessFixture(t)
	for _, c := range []struct {
		path, user string
		want       []string
		absent     []string
	}{
		{"/pub/", "alice", []string{`Signed in as <strong>alice</strong><span class="may"> · here you may read and list</span>`}, []string{"Sign in", `id="upload"`}},
		{"/private/", "alice", []string{`Signed in as <strong>alice</strong><span class="may"> · here you may read, list, write and delete</span>`}, []string{"Sign in"}},
		{"/", "bob", []string{`Signed in as <strong>bob</strong><span class="may"> · here you may read and list</span>`}, nil},
		{"/pub/", "", []string{`<a href="/?login=%2Fpub%2F">Sign in</a>`}, []string{"Signed in", `id="upload"`}},
		{"/", "", []string{`<a href="/?login=%2F">Sign in</a>`}, []string{"Signed in"}},
	} {
		page := f.get(c.path, c.user, "Accept", "text/html").Body.String()
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s as %q: page lacks %s", c.path, c.user, w)
			}
		}
		for _, a := range c.absent {
			if strings.Contains(page, a) {
				t.Errorf("%s as %q: page shows %s", c.path, c.user, a)
			}
		}
	}

	shared := f.get(f.link(t, links.Link{Kind: links.Folder, Path: "pub", Expires: f.now.Add(time.Hour)}, ""), "").Body.String()
	if !strings.Contains(shared, "a.txt") || strings.Contains(shared, "Sign in") || strings.Contains(shared, "Signed in") {
		t.Errorf("share link's page:\n%s", shared)
	}
	open := newFixture(t, nil, setup{writes: true, uploads: true})
	plain := newFixture(t, nil, setup{})
	for what, f := range map[string]*fixture{"open uploads": open, "no policy": plain} {
		if p := f.get("/", "").Body.String(); strings.Contains(p, "Sign in") || strings.Contains(p, "Signed in") {
			t.Errorf("%s: the page offers to sign in", what)
		}
	}
	withToken := newFixture(t, nil, setup{token: token, writes: true, uploads: true})
	if p := withToken.get("/", "").Body.String(); !strings.Contains(p, `<a href="/?login=%2F">Sign in</a>`) {
		t.Error("a server with a token offers no sign-in")
	}
	p := withToken.get("/", "", "Authorization", basic("anyone", token)).Body.String()
	if !strings.Contains(p, `Signed in as <strong>anyone</strong><span class="by"> with the server's token</span>`) || !strings.Contains(p, `id="upload"`) {
		t.Error("the token as a basic-auth password does not sign in, by the name given, to the upload area")
	}
	if !strings.Contains(p, `<a class="button small" id="sign-out" href="/?logout=%2F">Sign out</a>`) {
		t.Error("a browser signed in with a basic credential cannot sign out")
	}
	if p := withToken.get("/", "", "Authorization", "Bearer "+token).Body.String(); !strings.Contains(p, "Signed in with the server's token") || strings.Contains(p, "Sign out") || strings.Contains(p, ">Sign in<") {
		t.Error("a bearer token's page does not say it is signed in, or offers to sign out what no browser keeps")
	}
	// Signing out of a folder anonymous visitors may not see goes to the
	// root.
	if p := f.get("/private/", "", "Authorization", basic("x", "alice-token-0123456789")).Body.String(); !strings.Contains(p, `href="/?logout=%2F"`) {
		t.Error("signing out of /private/ does not go to the root")
	}
	if p := f.get("/pub/", "", "Authorization", basic("x", "alice-token-0123456789")).Body.String(); !strings.Contains(p, `href="/?logout=%2Fpub%2F"`) {
		t.Error("signing out of /pub/ does not come back to it")
	}
}

// TestPageKeys: the page's help names the keys that rename and delete
// only to who may do it in the folder, and the keys that select only
// where entries can be selected.
func TestPageKeys(t *testing.T) {
	f := newAccessFixture(t)
	keys := func(path, user string) string {
		page := f.get(path, user).Body.String()
		i := strings.Index(page, `<p id="keys"`)
		if i < 0 {
			t.Fatalf("%s as %q: no keys on the page:\n%s", path, user, page)
		}
		return page[i : i+strings.Index(page[i:], "</p>")]
	}
	if k := keys("/private/", "alice"); !strings.Contains(k, "<kbd>F2</kbd> renames") || !strings.Contains(k, "<kbd>Delete</kbd> deletes") || !strings.Contains(k, "selects") {
		t.Errorf("alice's keys in /private/: %s", k)
	}
	for _, c := range []struct{ path, user string }{{"/pub/", ""}, {"/pub/", "bob"}, {"/", "bob"}} {
		if k := keys(c.path, c.user); strings.Contains(k, "renames") || strings.Contains(k, "deletes") {
			t.Errorf("%s as %q: the keys offer renames or deletes: %s", c.path, c.user, k)
		}
	}
	link := f.link(t, links.Link{Kind: links.Folder, Path: "pub", Expires: f.now.Add(time.Hour)}, "")
	if k := keys(link, ""); strings.Contains(k, "selects") || strings.Contains(k, "renames") || !strings.Contains(k, "previews") {
		t.Errorf("a share link's keys: %s", k)
	}
}

// TestPageVisibleTo: the page says who may see its folder, by the rules
// in force; a share link's page does not.
func TestPageVisibleTo(t *testing.T) {
	f := newAccessFixture(t)
	os.MkdirAll(filepath.Join(f.dir, "pub", "sealed"), 0o755)
	for path, want := range map[string]string{
		"/pub/":        "Visible to everyone<",
		"/private/":    "Visible to alice<",
		"/pub/sealed/": "Visible to everyone but bob<",
	} {
		if page := f.get(path, "alice").Body.String(); !strings.Contains(page, want) {
			t.Errorf("%s: the page does not say %q", path, want)
		}
	}
	shared := f.get(f.link(t, links.Link{Kind: links.Folder, Path: "pub", Expires: f.now.Add(time.Hour)}, ""), "").Body.String()
	if strings.Contains(shared, "Visible to") {
		t.Error("a share link's page says who may see the folder")
	}
}
