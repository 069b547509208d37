//go:build e2e

package e2e

import (
	"archive/zip"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"largo/internal/poll"
)

// readerToken signs in as reader, who reads everything and changes
// nothing.
const readerToken = "reader-token-0123456789"

// manageAccess: everyone reads and lists; alice (a password) does
// everything in /work; reader (a token) is a user who may only read.
const manageAccess = `
[[user]]
name = "alice"
password = "ALICE_HASH"

[[user]]
name = "reader"
tokens = ["` + readerToken + `"]

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/work"
users = ["alice"]
allow = ["all"]
`

// manageServer seeds g with a folder to manage and serves it with writes
// on, under manageAccess.
func manageServer(t *testing.T, g *target) *server {
	t.Helper()
	for name, content := range map[string]string{
		"work/notes.txt":      "notes",
		"work/draft.txt":      "first draft",
		"work/a.txt":          "a",
		"work/b.txt":          "bb",
		"work/old/x.txt":      "x",
		"work/old/deep/y.txt": "yy",
		"work/dest/keep.txt":  "k",
	} {
		g.seed(t, name, content)
	}
	args := []string{"--upload", "--access", writeAccessFile(t, manageAccess)}
	if g.srv == nil {
		return startServer(t, g.dir, args...)
	}
	return startS3Largo(t, g.srv, "", args...)
}

// rowSel is the CSS selector of the row of name (a plain name).
func rowSel(name string) string { return `#files tr[data-name="` + name + `"]` }

// hasRow is a script that says whether the listing shows name.
func hasRow(name string) string { return `document.querySelector('` + rowSel(name) + `') !== null` }

// openRowMenu opens the menu of the row of name, waits until it knows
// what the visitor may do, and returns its items' actions.
func (b *browser) openRowMenu(name string) []string {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(rowSel(name) + " .row-menu")))
	b.waitJS("the menu of "+name, `document.getElementById("row-menu").dataset.ready !== undefined`, 10*time.Second)
	return eval[[]string](b, `Array.from(document.querySelectorAll("#row-menu button"), b => b.dataset.act)`)
}

// menuItem clicks the item of the open menu that does act.
func (b *browser) menuItem(act string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(`#row-menu button[data-act="` + act + `"]`)))
}

// noProblem fails the test if the page shows a problem: what went wrong
// in an action the test expects to succeed.
func (b *browser) noProblem(after string) {
	b.t.Helper()
	if !eval[bool](b, `document.getElementById("problem").hidden`) {
		b.t.Errorf("after %s the page says: %s", after, eval[string](b, `document.getElementById("problem").textContent`))
	}
}

// waitDialog waits until the dialog id is open.
func (b *browser) waitDialog(id string) {
	b.t.Helper()
	b.waitJS("the dialog "+id, `document.getElementById("`+id+`").open`, 10*time.Second)
}

// waitSelection waits until the selection bar knows what may be done
// with the rows selected, and returns its buttons' actions, shown ones.
func (b *browser) waitSelection() []string {
	b.t.Helper()
	b.waitJS("the selection's actions", `document.getElementById("selbar").dataset.ready !== undefined && !document.getElementById("selbar").hidden`, 10*time.Second)
	return eval[[]string](b, `Array.from(document.querySelectorAll("#selbar button[data-act]:not([hidden])"), b => b.dataset.act)`)
}

// downloadsTo makes the browser save downloads in dir.
func (b *browser) downloadsTo(dir string) {
	b.t.Helper()
	b.call(func(ctx context.Context, _ *chromedp.Target) error {
		c := chromedp.FromContext(ctx)
		_, err := cdp.Call(ctx, c.Browser, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
			Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir,
		})
		return err
	})
}

// fetchStatus makes a request from the page, with the credential the
// browser holds, and returns its status.
func (b *browser) fetchStatus(method, url, body string) int {
	b.t.Helper()
	opts := `{method: ` + jsQuote(method) + `}`
	if body != "" {
		opts = `{method: ` + jsQuote(method) + `, body: new URLSearchParams(` + jsQuote(body) + `)}`
	}
	return eval[int](b, `fetch(`+jsQuote(url)+`, `+opts+`).then(r => r.status)`)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestBrowserManage manages a folder from its page in Chromium, as a
// user who may change it and as one who may not, on a folder and on a
// bucket: a new folder, a rename, a move of files and of a folder to a
// folder picked in a dialog (selected with the keyboard), a selection
// downloaded as one zip, a folder deleted once the confirmation said
// what it holds, a file changed behind the page's back (a rename and a
// delete refused with a clear message, nothing lost), a share link made
// and revoked; for the reader, no control to change anything, and the
// server refusing the same requests sent anyway.
func TestBrowserManage(t *testing.T) { forEachTarget(t, browserManage) }

func browserManage(t *testing.T, g *target) {
	s := manageServer(t, g)
	work := filepath.Join(g.dir, "work")
	disk := g.srv == nil
	if disk {
		needAxe(t)
	}
	b := newBrowser(t)
	b.open(s.URL + "work/")
	b.signIn("alice", aliceBrowserPassword, "alice")
	b.waitJS("the tools", `!document.getElementById("tools").hidden`, 10*time.Second)

	// A new folder.
	b.do(chromedp.Click(chromedp.ID("new-folder")))
	b.waitDialog("ask")
	b.do(chromedp.SendKeys(chromedp.ID("ask-name"), "reports"), chromedp.Click(chromedp.ID("ask-ok")))
	b.waitJS("the new folder's row", hasRow("reports")+` && !document.getElementById("ask").open`, 10*time.Second)
	if fi, err := os.Stat(filepath.Join(work, "reports")); err != nil || !fi.IsDir() {
		t.Errorf("the new folder: %v", err)
	}
	b.noProblem("a new folder")

	// A rename, from the row's menu.
	if acts := b.openRowMenu("notes.txt"); !slices.Equal(acts, []string{"preview", "download", "rename", "move", "share", "delete"}) {
		t.Errorf("alice's menu of a file: %q", acts)
	}
	if disk {
		b.checkAccessibility("a row's menu")
	}
	b.menuItem("rename")
	b.waitDialog("ask")
	if sel := eval[string](b, `(i => i.value.slice(i.selectionStart, i.selectionEnd))(document.getElementById("ask-name"))`); sel != "notes" {
		t.Errorf("the rename dialog selects %q; want the name without its extension", sel)
	}
	b.do(chromedp.SetValue(chromedp.ID("ask-name"), "notes-2025.txt"), chromedp.Click(chromedp.ID("ask-ok")))
	b.waitJS("the renamed row", hasRow("notes-2025.txt")+` && !(`+hasRow("notes.txt")+`)`, 10*time.Second)
	if got := readFile(t, filepath.Join(work, "notes-2025.txt")); got != "notes" {
		t.Errorf("the renamed file holds %q", got)
	}
	b.noProblem("a rename")

	// Two files and a folder selected from the keyboard, moved to a
	// folder picked in the dialog.
	b.do(chromedp.Focus(chromedp.CSS(rowSel("a.txt") + " td.name a")))
	b.key(" ")
	b.do(chromedp.KeyEvent(kb.ArrowDown, chromedp.KeyModifiers(kb.ModifierShift)))
	b.do(chromedp.Click(chromedp.CSS(rowSel("old") + " td.pick input")))
	if acts := b.waitSelection(); !slices.Equal(acts, []string{"zip", "tar", "move", "delete", "clear"}) {
		t.Errorf("alice's selection offers %q", acts)
	}
	if got := eval[string](b, `document.getElementById("sel-count").textContent`); got != "2 files and 1 folder selected" {
		t.Errorf("selection bar says %q", got)
	}
	b.do(chromedp.Click(chromedp.CSS(`#selbar button[data-act="move"]`)))
	b.waitDialog("pick")
	b.waitJS("the folders to move to", `document.getElementById("pick").dataset.ready !== undefined`, 10*time.Second)
	if got := eval[[]string](b, `Array.from(document.querySelectorAll("#pick-list button"), b => b.textContent)`); !slices.Equal(got, []string{"dest/", "reports/"}) {
		t.Errorf("folders offered: %q (not the folder moved)", got)
	}
	if !eval[bool](b, `document.getElementById("pick-ok").disabled`) {
		t.Error("moving to where the files are is offered")
	}
	b.do(chromedp.Click(chromedp.CSS(`#pick-list li:first-child button`)))
	b.waitJS("dest in the picker", `document.getElementById("pick").dataset.ready !== undefined && !document.getElementById("pick-ok").disabled`, 10*time.Second)
	if disk {
		b.screenshot("move")
		b.checkAccessibility("the move dialog")
	}
	b.do(chromedp.Click(chromedp.ID("pick-ok")))
	b.waitJS("the moved rows gone", `!(`+hasRow("a.txt")+`) && !(`+hasRow("b.txt")+`) && !(`+hasRow("old")+`)`, 30*time.Second)
	for name, want := range map[string]string{"dest/a.txt": "a", "dest/b.txt": "bb", "dest/old/x.txt": "x", "dest/old/deep/y.txt": "yy"} {
		if got := readFile(t, filepath.Join(work, name)); got != want {
			t.Errorf("%s holds %q; want %q", name, got, want)
		}
	}
	if news := eval[string](b, `document.getElementById("news").textContent`); news != "Moved 3 items to /work/dest/." {
		t.Errorf("news %q", news)
	}
	b.noProblem("a move")

	// A selection as one zip.
	downloads := t.TempDir()
	b.downloadsTo(downloads)
	b.do(chromedp.Click(chromedp.CSS(rowSel("dest") + " td.pick input")))
	b.do(chromedp.Click(chromedp.CSS(rowSel("notes-2025.txt") + " td.pick input")))
	b.waitSelection()
	b.do(chromedp.Click(chromedp.CSS(`#selbar button[data-act="zip"]`)))
	zipPath := filepath.Join(downloads, "work.zip")
	if !poll.Until(30*time.Second, 50*time.Millisecond, func() bool { _, err := os.Stat(zipPath); return err == nil }) {
		t.Fatal("no work.zip downloaded")
	}
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	zr.Close()
	if want := []string{"work/", "work/dest/", "work/dest/a.txt", "work/dest/b.txt", "work/dest/keep.txt", "work/dest/old/", "work/dest/old/deep/", "work/dest/old/deep/y.txt", "work/dest/old/x.txt", "work/notes-2025.txt"}; !slices.Equal(names, want) {
		t.Errorf("the zip holds %q; want %q", names, want)
	}
	b.do(chromedp.Click(chromedp.CSS(`#selbar button[data-act="clear"]`)))

	// A folder deleted, once the confirmation said what it holds.
	b.openRowMenu("dest")
	b.menuItem("delete")
	b.waitDialog("confirm")
	b.waitJS("the count", `document.querySelector("#confirm-body li[data-counted]") !== null`, 10*time.Second)
	if got := eval[string](b, `document.getElementById("confirm-body").textContent`); !strings.Contains(got, "dest/ (a folder with 5 files in 3 folders, 7 B)") {
		t.Errorf("the confirmation says %q", got)
	}
	if disk {
		b.screenshot("delete")
		b.checkAccessibility("the confirmation of a delete")
	}
	b.do(chromedp.Click(chromedp.ID("confirm-ok")))
	b.waitJS("the deleted row gone", `!(`+hasRow("dest")+`)`, 10*time.Second)
	if _, err := os.Stat(filepath.Join(work, "dest")); !os.IsNotExist(err) {
		t.Errorf("dest after its delete: %v", err)
	}
	b.noProblem("a delete")

	// A file changed behind the page's back: the rename and the delete
	// are refused, and say why; nothing is lost.
	g.seed(t, "work/draft.txt", "second draft, longer")
	b.openRowMenu("draft.txt")
	b.menuItem("rename")
	b.waitDialog("ask")
	b.do(chromedp.SetValue(chromedp.ID("ask-name"), "draft-v2.txt"), chromedp.Click(chromedp.ID("ask-ok")))
	b.waitJS("the refusal", `document.getElementById("ask-error").textContent !== ""`, 10*time.Second)
	if got := eval[string](b, `document.getElementById("ask-error").textContent`); !strings.Contains(got, "changed after this page listed it") {
		t.Errorf("a rename of a changed file says %q", got)
	}
	b.key(kb.Escape)
	if got := readFile(t, filepath.Join(work, "draft.txt")); got != "second draft, longer" || hasFile(filepath.Join(work, "draft-v2.txt")) {
		t.Errorf("after a refused rename draft.txt holds %q", got)
	}
	b.noProblem("a refused rename")
	g.seed(t, "work/draft.txt", "third draft, longer still")
	b.openRowMenu("draft.txt")
	b.menuItem("delete")
	b.waitDialog("confirm")
	b.do(chromedp.Click(chromedp.ID("confirm-ok")))
	b.waitJS("the refusal", `!document.getElementById("problem").hidden`, 10*time.Second)
	if got := eval[string](b, `document.getElementById("problem").textContent`); !strings.Contains(got, "Deleting draft.txt was not done: the file changed after this page listed it") {
		t.Errorf("a delete of a changed file says %q", got)
	}
	if got := readFile(t, filepath.Join(work, "draft.txt")); got != "third draft, longer still" {
		t.Errorf("after a refused delete draft.txt holds %q", got)
	}

	// A share link, made from the row's menu and revoked from the list.
	b.openRowMenu("notes-2025.txt")
	b.menuItem("share")
	b.waitDialog("share-dialog")
	if disk {
		b.checkAccessibility("the share dialog")
	}
	b.do(chromedp.Click(chromedp.CSS(`#share-entry button[type="submit"]`)))
	b.waitJS("the link", `document.querySelector("#entry-link .made-url") !== null`, 10*time.Second)
	link := eval[string](b, `document.querySelector("#entry-link .made-url").value`)
	if resp := get(t, link); resp.StatusCode != 200 {
		t.Errorf("the new link: %d", resp.StatusCode)
	}
	b.do(chromedp.Click(chromedp.ID("share-close")))
	b.do(chromedp.Click(chromedp.ID("show-links")))
	b.waitDialog("links-dialog")
	b.waitJS("the links", `document.querySelectorAll("#links-table tbody tr").length === 1`, 10*time.Second)
	if got := eval[string](b, `document.querySelector("#links-table tbody tr").textContent`); !strings.Contains(got, "/work/notes-2025.txt") || !strings.Contains(got, "file") {
		t.Errorf("the list of links shows %q", got)
	}
	if disk {
		b.checkAccessibility("the list of links")
	}
	b.do(chromedp.Click(chromedp.CSS(`#links-table tbody tr button.danger`)))
	b.waitJS("the revoked link gone", `document.querySelectorAll("#links-table tbody tr").length === 0`, 10*time.Second)
	if resp := get(t, link); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the revoked link: %d", resp.StatusCode)
	}
	b.do(chromedp.Click(chromedp.ID("links-close")))
	b.checkPage()
	g.clean(t)

	t.Run("reader", func(t *testing.T) {
		r := newBrowser(t)
		r.open(s.URL + "work/")
		r.signIn("reader", readerToken, "reader")
		r.waitJS("the tools", `!document.getElementById("tools").hidden`, 10*time.Second)
		if eval[bool](r, `document.getElementById("new-folder") !== null`) {
			t.Error("the reader is offered a new folder")
		}
		if acts := r.openRowMenu("draft.txt"); !slices.Equal(acts, []string{"preview", "download", "share"}) {
			t.Errorf("the reader's menu of a file: %q", acts)
		}
		r.key(kb.Escape)
		r.do(chromedp.Click(chromedp.CSS(rowSel("reports") + " td.pick input")))
		if acts := r.waitSelection(); !slices.Equal(acts, []string{"zip", "tar", "clear"}) {
			t.Errorf("the reader's selection offers %q", acts)
		}
		// What the page does not offer, the server refuses.
		for _, c := range []struct{ method, url, body string }{
			{"POST", "/_largo/move", "from=/work/draft.txt&to=/work/mine.txt"},
			{"POST", "/_largo/mkdir", "path=/work/mine"},
			{"DELETE", "/work/draft.txt", ""},
			{"DELETE", "/work/reports/?recursive=1", ""},
		} {
			if code := r.fetchStatus(c.method, c.url, c.body); code != http.StatusForbidden {
				t.Errorf("the reader's %s %s %s: %d; want 403", c.method, c.url, c.body, code)
			}
		}
		if !hasFile(filepath.Join(work, "draft.txt")) || !hasFile(filepath.Join(work, "reports")) {
			t.Error("the reader changed the folder")
		}
		r.checkPage()
	})
}

func hasFile(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
