//go:build e2e

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

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
