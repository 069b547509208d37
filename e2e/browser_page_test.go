//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// allowClipboard lets the page write and read the clipboard, as a person
// who allowed it would, and keeps the page focused (the clipboard needs
// it) whatever the window does.
func (b *browser) allowClipboard(origin string) {
	b.t.Helper()
	b.call(func(ctx context.Context, t *chromedp.Target) error {
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			c := chromedp.FromContext(ctx)
			if _, err := cdp.Call(ctx, c.Browser, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin,
			}); err != nil {
				return err
			}
		}
		_, err := cdp.Call(ctx, t, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true})
		return err
	})
}

// setTimezone makes the browser live in the time zone id.
func (b *browser) setTimezone(id string) {
	b.t.Helper()
	b.call(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: id})
		return err
	})
}

// rect is an element's box on the screen, in CSS pixels.
type rect struct{ Left, Top, Right, Bottom float64 }

// box returns the box of the element a script finds.
func (b *browser) box(elem string) rect {
	b.t.Helper()
	return eval[rect](b, `(r => ({left: r.left, top: r.top, right: r.right, bottom: r.bottom}))((`+elem+`).getBoundingClientRect())`)
}

// fitsIn fails the test unless inner lies inside outer, left to right.
func fitsIn(t *testing.T, what string, inner, outer rect) {
	t.Helper()
	if inner.Left < outer.Left-0.5 || inner.Right > outer.Right+0.5 {
		t.Errorf("%s runs past its box: %.0f..%.0f in %.0f..%.0f", what, inner.Left, inner.Right, outer.Left, outer.Right)
	}
}

// untilRe is how the page says when a link stops working: in UTC, named.
var untilRe = regexp.MustCompile(`^Works until (\d{4}-\d\d-\d\d \d\d:\d\d) UTC\.`)

// TestBrowserShare: "Share this folder" opens as a form whose fields sit
// in a grid, each under its label, with the button below them; the link
// made, there and in an entry's share dialog, sits in a box that fits
// the form (or the dialog), with a Copy button that puts it on the
// clipboard, and says until when it works in UTC, as the list of links
// does, in a browser whose time zone is not UTC.
func TestBrowserShare(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	s := manageServer(t, g)
	b := newBrowser(t)
	b.allowClipboard(strings.TrimSuffix(s.URL, "/"))
	b.open(s.URL + "work/")
	b.signIn("alice", aliceBrowserPassword, "alice")
	b.waitJS("the tools", `!document.getElementById("tools").hidden`, 10*time.Second)
	b.setTimezone("Asia/Kolkata")

	b.do(chromedp.Click(chromedp.CSS("#share summary")))
	expires, password, write := b.box(`document.getElementById("share-expires")`), b.box(`document.getElementById("share-password")`), b.box(`document.querySelector("#share-form input[name=write]")`)
	button := b.box(`document.querySelector("#share-form button[type=submit]")`)
	if lbl := b.box(`document.querySelector("label[for=share-expires]")`); lbl.Bottom > expires.Top+0.5 {
		t.Error(`"Link works for" is not above its field`)
	}
	if lbl := b.box(`document.querySelector("label[for=share-password]")`); lbl.Bottom > password.Top+0.5 {
		t.Error(`"Password" is not above its field`)
	}
	if write.Top < expires.Bottom || button.Top < write.Bottom {
		t.Error("the share form is one cramped row: the drop-box box and the button are not below the fields")
	}
	fitsIn(t, "the share form", b.box(`document.getElementById("share-form")`), b.box(`document.getElementById("main")`))

	b.do(chromedp.Click(chromedp.CSS(`#share-form button[type="submit"]`)))
	b.waitJS("the link", `document.querySelector("#share-link .made-url") !== null`, 10*time.Second)
	link := eval[string](b, `document.querySelector("#share-link .made-url").value`)
	if !strings.Contains(link, "/_largo/s/") {
		t.Fatalf("the link made: %q", link)
	}
	fitsIn(t, "the link made", b.box(`document.querySelector("#share-link .made-url")`), b.box(`document.getElementById("share-form")`))
	fitsIn(t, "the Copy button", b.box(`document.querySelector("#share-link .made-copy")`), b.box(`document.getElementById("share-form")`))
	until := eval[string](b, `document.querySelector("#share-link .made-until").textContent`)
	m := untilRe.FindStringSubmatch(until)
	if m == nil {
		t.Errorf("the link made says %q; want when it stops working, in UTC", until)
	} else if at, err := time.Parse("2006-01-02 15:04", m[1]); err != nil || at.Sub(time.Now().UTC().Add(24*time.Hour)).Abs() > 2*time.Minute {
		t.Errorf("the link works until %q (UTC), not a day from now (%v)", m[1], err)
	}
	b.do(chromedp.Click(chromedp.CSS("#share-link .made-copy")))
	b.waitJS("the copy", `document.querySelector("#share-link .made-said").textContent === "Copied."`, 5*time.Second)
	if got := eval[string](b, `navigator.clipboard.readText()`); got != link {
		t.Errorf("the clipboard holds %q; want the link %q", got, link)
	}
	if resp := get(t, link); resp.StatusCode != 200 {
		t.Errorf("the link copied: %d", resp.StatusCode)
	}
	b.screenshot("share")
	b.checkAccessibility("the share form with its link")

	// An entry's dialog: the link fits the dialog.
	b.openRowMenu("notes.txt")
	b.menuItem("share")
	b.waitDialog("share-dialog")
	b.do(chromedp.Click(chromedp.CSS(`#share-entry button[type="submit"]`)))
	b.waitJS("the link", `document.querySelector("#entry-link .made-url") !== null`, 10*time.Second)
	dialog := b.box(`document.getElementById("share-dialog")`)
	fitsIn(t, "the dialog's link", b.box(`document.querySelector("#entry-link .made-url")`), rect{Left: dialog.Left, Right: dialog.Right})
	fitsIn(t, "the dialog's Copy button", b.box(`document.querySelector("#entry-link .made-copy")`), rect{Left: dialog.Left, Right: dialog.Right})
	if eval[bool](b, `(d => d.scrollWidth > d.clientWidth)(document.getElementById("share-dialog"))`) {
		t.Error("the share dialog scrolls sideways")
	}
	if until := eval[string](b, `document.querySelector("#entry-link .made-until").textContent`); !untilRe.MatchString(until) {
		t.Errorf("the dialog's link says %q", until)
	}
	b.screenshot("share-dialog")
	b.checkAccessibility("the share dialog with its link")
	b.do(chromedp.Click(chromedp.ID("share-close")))

	// The list of links says when each stops working, in UTC too.
	b.do(chromedp.Click(chromedp.ID("show-links")))
	b.waitDialog("links-dialog")
	b.waitJS("the links", `document.querySelectorAll("#links-table tbody tr").length === 2`, 10*time.Second)
	for _, cell := range eval[[]string](b, `Array.from(document.querySelectorAll("#links-table tbody tr td:nth-child(3)"), td => td.textContent)`) {
		if !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d UTC$`).MatchString(cell) {
			t.Errorf("the list of links says a link expires %q; want a time in UTC", cell)
		}
	}
	b.do(chromedp.Click(chromedp.ID("links-close")))
	b.checkPage()
}

// TestBrowserLookup: "Filter by name" and "Find below this folder" sit
// together, side by side, and each says what it does.
func TestBrowserLookup(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	s := manageServer(t, g)
	b := newBrowser(t)
	b.open(s.URL + "work/")
	b.waitJS("the search box", `getComputedStyle(document.getElementById("find")).display !== "none"`, 10*time.Second)
	filter, find := b.box(`document.querySelector(".lookup .filter")`), b.box(`document.getElementById("find")`)
	if eval[bool](b, `document.querySelector(".lookup .filter").parentElement !== document.getElementById("find").parentElement`) || (filter.Top-find.Top) > 1 || (find.Top-filter.Top) > 1 || find.Left < filter.Right {
		t.Errorf("the filter (%v) and the search (%v) do not sit side by side", filter, find)
	}
	for _, c := range []struct{ input, want string }{
		{"filter", "Shows only the entries of this folder whose names hold the text."},
		{"find-text", "Looks for the text in the names of this folder and of every folder below it."},
	} {
		if got := eval[string](b, `document.getElementById(document.getElementById("`+c.input+`").getAttribute("aria-describedby")).textContent`); got != c.want {
			t.Errorf("#%s says %q; want %q", c.input, got, c.want)
		}
	}
	b.checkAccessibility("the filter and the search")
	b.checkPage()
}

// TestBrowserKeysHelp: the keys the page's foot lists are those its
// visitor may use: renames and deletes only for who may do them in the
// folder, selecting only where there is a selection.
func TestBrowserKeysHelp(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	s := manageServer(t, g)
	link := shareLink(t, g, s, "/work")
	b := newBrowser(t)
	keys := func() string {
		b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
		return eval[string](b, `document.getElementById("keys").innerText`)
	}
	b.open(s.URL + "work/")
	if k := keys(); strings.Contains(k, "F2") || strings.Contains(k, "Delete") || !strings.Contains(k, "Space selects") {
		t.Errorf("an anonymous reader is told %q", k)
	}
	b.open(link)
	if k := keys(); strings.Contains(k, "F2") || strings.Contains(k, "Delete") || strings.Contains(k, "selects") || !strings.Contains(k, "P previews") {
		t.Errorf("a share link's visitor is told %q", k)
	}
	b.open(s.URL + "work/")
	b.signIn("alice", aliceBrowserPassword, "alice")
	if k := keys(); !strings.Contains(k, "F2 renames") || !strings.Contains(k, "Delete deletes") {
		t.Errorf("alice, who may rename and delete, is told %q", k)
	}
	b.checkPage()
}

// openOnPhone signs in at url as user, then opens url again in a phone's
// screen, which the browser keeps until the test ends.
func (b *browser) openOnPhone(url, user, password string) {
	b.t.Helper()
	b.open(url)
	b.signIn(user, password, user)
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		chromedp.Do(ctx, chromedp.ResetViewport())
	})
	b.open(url)
}

// TestBrowserPhoneUpload: on a phone, with uploads going, the folder's
// list is in sight: the upload area takes a few lines, its rows
// scrolling within it.
func TestBrowserPhoneUpload(t *testing.T) {
	g := &target{kind: "disk", dir: t.TempDir()}
	s := manageServer(t, g)
	srcs := t.TempDir()
	var files []string
	for _, name := range []string{"one.bin", "two.bin", "three.bin", "four.bin"} {
		p := filepath.Join(srcs, name)
		writeRandom(t, p, 32<<20, uint64(len(files)))
		files = append(files, p)
	}
	b := newBrowser(t)
	b.openOnPhone(s.URL+"work/", "alice", aliceBrowserPassword)
	b.waitJS("the upload area", `!document.getElementById("upload").hidden`, 10*time.Second)
	b.throttleUploads(2 << 20)
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), files))
	b.waitJS("the uploads", `document.querySelectorAll("#upload-list li").length === 4 && document.querySelector('#upload-list li[data-state="uploading"]') !== null`, 10*time.Second)
	if bottom, screen := eval[float64](b, `document.querySelector("#files tbody tr[data-name]").getBoundingClientRect().bottom`), eval[float64](b, `innerHeight`); bottom > screen {
		t.Errorf("on a phone the first entry of the list ends %.0f px down a screen of %.0f: the upload area covers the list", bottom, screen)
	}
	if eval[bool](b, `document.documentElement.scrollWidth > document.documentElement.clientWidth`) {
		t.Error("the page scrolls sideways")
	}
	b.screenshot("phone-upload")
	b.checkAccessibility("uploads on a phone")
	b.throttleUploads(-1)
	b.waitJS("the uploads' end", `document.querySelectorAll('#upload-list li[data-state="done"]').length === 4`, 60*time.Second)
	b.checkPage()
	for _, p := range files {
		os.Remove(p)
	}
}

// TestBrowserSignOut: a visitor signed in with the server's token is
// called by the name they gave, not "token"; "Sign out" makes the
// browser forget its credential (with and without JavaScript): the page,
// which the server made for a request that carried none, offers to sign
// in again and has no upload area.
func TestBrowserSignOut(t *testing.T) {
	dir := listingTree(t)
	s := startServer(t, dir, "--upload", "--token", "the-sign-out-token-0123")
	b := newBrowser(t)
	b.open(s.URL)
	b.signIn("Ada", "the-sign-out-token-0123", "Ada")
	if got := eval[string](b, whoJS); !strings.HasPrefix(got, "Signed in as Ada with the server's token · here you may") {
		t.Errorf("the page says %q", got)
	}
	b.screenshot("signed-in")
	b.do(chromedp.Click(chromedp.ID("sign-out")))
	b.waitJS("the page signed out", `document.querySelector(".who a")?.textContent === "Sign in" && document.getElementById("upload") === null`, 10*time.Second)
	b.checkPage()

	t.Run("without JavaScript", func(t *testing.T) {
		b := b.with(t)
		b.signIn("Ada", "the-sign-out-token-0123", "Ada")
		b.setScripts(false)
		defer b.setScripts(true)
		b.open(s.URL + "a-dir/")
		b.do(chromedp.Click(chromedp.ID("sign-out")))
		b.waitJS("the page that says so", `document.querySelector("h1")?.textContent === "Signed out"`, 10*time.Second)
		b.do(chromedp.Click(chromedp.CSS("main a")))
		b.waitJS("the folder, signed out", `location.pathname === "/a-dir/" && document.querySelector(".who a")?.textContent === "Sign in"`, 10*time.Second)
	})
}
