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
// dark theme: a folder, an empty folder, the token form, the unlocked
// upload area, a phone's width, and a page without JavaScript. The upload
// rows are checked in TestBrowserUpload, while one is in progress.
func TestBrowserAccessibility(t *testing.T) {
	dir := listingTree(t)
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	s := startServer(t, dir, "--upload", "--token", "a11y-token")
	b := newBrowser(t)
	for _, scheme := range []string{"light", "dark"} {
		b.setColorScheme(scheme)
		b.open(s.URL)
		b.waitJS("the token form", `!document.getElementById("token-form").hidden`, 10*time.Second)
		b.checkAccessibility(scheme + " folder with the token form")

		b.open(s.URL + "empty/")
		b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
		b.checkAccessibility(scheme + " empty folder")

		b.open(s.URL + "?q=nothing-matches")
		b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
		b.checkAccessibility(scheme + " filtered to nothing")
	}
	b.setColorScheme("light")
	b.open(s.URL)
	b.do(chromedp.SendKeys(chromedp.ID("token"), "wrong"), chromedp.Click(chromedp.CSS("#token-form button")))
	b.waitJS("the refusal", `document.getElementById("token-error").textContent.includes("refused")`, 10*time.Second)
	b.checkAccessibility("refused token")
	b.do(chromedp.SetValue(chromedp.ID("token"), "a11y-token"), chromedp.Click(chromedp.CSS("#token-form button")))
	b.waitJS("the drop area", `!document.getElementById("drop").hidden`, 10*time.Second)
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
