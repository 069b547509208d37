//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserAccessibility runs axe-core's WCAG 2.1 A and AA rules (labels,
// names, contrast, structure) on every kind of page, in the light and the
// dark theme: a folder with its "Sign in" link, an empty folder, a folder
// filtered to nothing, the upload area of a signed-in user, a phone's
// width, and a page without JavaScript. The upload rows are checked in
// TestBrowserUpload, while one is in progress.
func TestBrowserAccessibility(t *testing.T) {
	dir := listingTree(t)
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	s := startServer(t, dir, "--upload", "--token", "a11y-token")
	b := newBrowser(t)
	for _, scheme := range []string{"light", "dark"} {
		b.setColorScheme(scheme)
		b.open(s.URL)
		b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
		b.checkAccessibility(scheme + " folder with the sign-in link")

		b.open(s.URL + "empty/")
		b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
		b.checkAccessibility(scheme + " empty folder")

		b.open(s.URL + "?q=nothing-matches")
		b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
		b.checkAccessibility(scheme + " filtered to nothing")
	}
	b.setColorScheme("light")
	b.open(s.URL)
	b.signIn("someone", "a11y-token", "someone")
	b.waitJS("the upload area", `!document.getElementById("upload").hidden`, 10*time.Second)
	for _, scheme := range []string{"light", "dark"} {
		b.setColorScheme(scheme)
		b.checkAccessibility(scheme + " upload area")
	}
	b.setColorScheme("light")

	b.do(chromedp.EmulateViewport(390, 844))
	b.open(s.URL + "a-dir/")
	b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
	b.checkAccessibility("phone")
	b.do(chromedp.ResetViewport())

	// The page as the server sent it: loaded without scripts, which are
	// turned back on (the page's own stay unrun) so that axe can run.
	b.setScripts(false)
	b.open(s.URL)
	b.setScripts(true)
	if eval[bool](b, `document.documentElement.classList.contains("js")`) {
		t.Fatal("the page's script ran")
	}
	b.checkAccessibility("without JavaScript")
	b.checkPage()
}
