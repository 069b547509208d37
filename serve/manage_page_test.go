package serve

import (
	"strings"
	"testing"

	"largo/links"
)

// TestPageManages: the page offers the file manager on the server's own
// pages, its new-folder button only where the gate lets its visitor make
// one, its links only to who is signed in; a share link's page offers
// none of it.
func TestPageManages(t *testing.T) {
	f := newAccessFixture(t)
	page := func(target, user string) string { return f.req("GET", target, user).Body.String() }
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
