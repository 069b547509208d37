package ui

import (
	"strings"
	"testing"
	"time"
)

// TestManagedPage: a page that manages files gives each row a checkbox
// and a menu, each file its ETag, and names its endpoints; its dialogs
// hold no script or style of their own; a page without management (a
// share link's) has menus for previews and nothing else.
func TestManagedPage(t *testing.T) {
	u := New("/_largo/ui/")
	mod := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	entries := []Entry{
		{Name: "a.txt", Size: 3, Modified: mod, ETag: `"e1"`},
		{Name: `<d>`, Dir: true, Modified: mod, ETag: `"dir-tags-are-not-shown"`},
	}
	page := render(t, u, Folder{
		Name:    "docs",
		Entries: entries,
		User:    "alice",
		Manage: &Manage{May: "/_largo/may", Archive: "/_largo/archive", Move: "/_largo/move", Mkdir: "/_largo/mkdir",
			Search: "/_largo/search", Share: "/_largo/share", Links: "/_largo/links/"},
	})
	for _, want := range []string{
		`data-may="/_largo/may" data-archive="/_largo/archive" data-move="/_largo/move" data-mkdir="/_largo/mkdir" data-search="/_largo/search" data-share="/_largo/share" data-links="/_largo/links/"`,
		`data-etag="&#34;e1&#34;"`,
		`<td class="pick"><input type="checkbox" aria-label="Select a.txt"></td>`,
		`aria-label="Actions: &lt;d&gt;"`,
		`<input type="checkbox" id="pick-all" aria-label="Select all shown">`,
		`id="new-folder"`, `id="show-links"`, `id="find"`, `id="selbar"`,
		`<dialog id="confirm"`, `<dialog id="ask"`, `<dialog id="pick"`, `<dialog id="share-dialog"`, `<dialog id="links-dialog"`, `<dialog id="preview"`,
		// One cell for each column, so that a column hidden (the
		// checkboxes and menus without the script, the times on a
		// phone) hides the parent's too.
		`<tr class="parent"><td class="pick"></td><td class="name"><a href="../" class="up-link">Parent folder</a></td><td class="size"></td><td class="mod"></td><td class="act"></td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("managed page lacks %s", want)
		}
	}
	if strings.Contains(page, "dir-tags") {
		t.Error("a folder's row carries an ETag")
	}
	checkPolicy(t, page)

	// Without a signed-in user's links or the right to make folders.
	reader := render(t, u, Folder{Name: "docs", Entries: entries, Manage: &Manage{May: "/m", Archive: "/a", Search: "/s"}})
	for _, absent := range []string{`id="new-folder"`, `id="show-links"`, `id="share-dialog"`} {
		if strings.Contains(reader, absent) {
			t.Errorf("a reader's page has %s", absent)
		}
	}
	// A share link's page.
	shared := render(t, u, Folder{Name: "pub/docs", Root: "pub", Entries: entries})
	for _, absent := range []string{"data-may", `class="pick"`, `id="selbar"`, `<dialog id="confirm"`, `id="find"`} {
		if strings.Contains(shared, absent) {
			t.Errorf("a share link's page has %s", absent)
		}
	}
	for _, want := range []string{`<dialog id="preview"`, `class="row-menu"`, `<tr class="parent"><td class="name"><a href="../" class="up-link">Parent folder</a></td><td class="size"></td>`} {
		if !strings.Contains(shared, want) {
			t.Errorf("a share link's page lacks %s", want)
		}
	}
}
