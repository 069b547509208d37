//go:build e2e

package e2e

import (
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// Names of the listing fixture, with two that would be markup if a page
// failed to escape them.
const (
	nameMarkup = `<img src=x onerror="document.title='pwned'">.txt`
	nameQuotes = `it's "quoted" & <b>.md`
)

// listingTree makes a folder whose names test the orders (case, numbers
// inside names), the escaping and the hiding of dotfiles.
func listingTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	base := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	files := []struct {
		name string
		size int
		age  time.Duration
	}{
		{"file2.txt", 300, 3 * time.Hour},
		{"file10.txt", 20, time.Hour},
		{"Zeta.bin", 5000, 2 * time.Hour},
		{nameMarkup, 7, 4 * time.Hour},
		{nameQuotes, 12, 5 * time.Hour},
		{".secret", 1, 0},
		{"a-dir/inner.txt", 3, 0},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", f.size)), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, base.Add(-f.age), base.Add(-f.age))
	}
	os.MkdirAll(filepath.Join(dir, "B-dir"), 0o755)
	// Both folders of one time, so that their order by time is by name
	// however long the writes above took.
	for _, d := range []string{"a-dir", "B-dir"} {
		os.Chtimes(filepath.Join(dir, d), base, base)
	}
	return dir
}

// Orders of the fixture: folders first, names as people read them.
var (
	byName     = []string{"a-dir", "B-dir", nameMarkup, "file2.txt", "file10.txt", nameQuotes, "Zeta.bin"}
	bySizeDesc = []string{"a-dir", "B-dir", "Zeta.bin", "file2.txt", "file10.txt", nameQuotes, nameMarkup}
	bySizeAsc  = []string{"a-dir", "B-dir", nameMarkup, nameQuotes, "file10.txt", "file2.txt", "Zeta.bin"}
	byTimeDesc = []string{"a-dir", "B-dir", "file10.txt", "Zeta.bin", "file2.txt", nameMarkup, nameQuotes}
)

// rowsJS lists the names of the visible rows, in order.
const rowsJS = `Array.from(document.querySelectorAll("#files tbody tr[data-name]:not([hidden])"), r => r.dataset.name)`

// serverOrder reads the order of a page the server rendered for a query.
func serverOrder(t *testing.T, url string) []string {
	t.Helper()
	resp := get(t, url)
	b, _ := io.ReadAll(resp.Body)
	var names []string
	for _, m := range regexp.MustCompile(`<tr data-name="([^"]*)"`).FindAllStringSubmatch(string(b), -1) {
		names = append(names, html.UnescapeString(m[1]))
	}
	return names
}

func checkOrder(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestBrowserListing opens a folder page in Chromium: its order, escaping,
// sorting by each column both ways (in the page, and by the server for the
// same query), filtering, keyboard navigation, the dark theme, a phone's
// width, and the same page without JavaScript.
func TestBrowserListing(t *testing.T) {
	dir := listingTree(t)
	s := startServer(t, dir)
	b := newBrowser(t)
	b.open(s.URL)
	b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)

	checkOrder(t, "first order", eval[[]string](b, rowsJS), byName)
	checkOrder(t, "server's name order", serverOrder(t, s.URL), byName)
	if eval[string](b, "document.title") == "pwned" || eval[int](b, `document.querySelectorAll("#files img").length`) != 0 {
		t.Error("a file name was read as markup")
	}
	if got := eval[string](b, `document.querySelector("#files tr[data-name^='it']").textContent`); !strings.Contains(got, nameQuotes) {
		t.Errorf("row text %q lacks %q", got, nameQuotes)
	}
	if eval[bool](b, `document.body.textContent.includes(".secret")`) {
		t.Error("the page shows a dotfile")
	}

	// Sorting in the page, checked against the server's order for the
	// query the page puts in its URL.
	for _, c := range []struct {
		click string
		query string
		want  []string
	}{
		{"size", "sort=size&order=desc", bySizeDesc},
		{"size", "sort=size&order=asc", bySizeAsc},
		{"modified", "sort=modified&order=desc", byTimeDesc},
		{"name", "sort=name&order=asc", byName},
		{"name", "sort=name&order=desc", reversedFiles(byName)},
	} {
		b.do(chromedp.Click(chromedp.CSS(`th a[data-sort="` + c.click + `"]`)))
		checkOrder(t, "page sorted by "+c.query, eval[[]string](b, rowsJS), c.want)
		if q := eval[string](b, "location.search"); !sameQuery(q, c.query) {
			t.Errorf("after sorting by %s the URL query is %q", c.click, q)
		}
		checkOrder(t, "server sorted by "+c.query, serverOrder(t, s.URL+"?"+c.query), c.want)
		sorted := eval[[]string](b, `Array.from(document.querySelectorAll("th[aria-sort]"), th => th.querySelector("a").dataset.sort + " " + th.getAttribute("aria-sort"))`)
		if want := c.click + map[bool]string{true: " descending", false: " ascending"}[strings.Contains(c.query, "desc")]; !slices.Equal(sorted, []string{want}) {
			t.Errorf("aria-sort %q after sorting by %s; want %q", sorted, c.query, want)
		}
	}
	b.do(chromedp.Click(chromedp.CSS(`th a[data-sort="name"]`))) // back to by name, ascending

	// Filtering, as the user types.
	b.do(chromedp.SendKeys(chromedp.ID("filter"), "FILE"))
	checkOrder(t, "filtered", eval[[]string](b, rowsJS), []string{"file2.txt", "file10.txt"})
	if sum := eval[string](b, `document.getElementById("summary").textContent`); !strings.Contains(sum, "2 of 7 shown") {
		t.Errorf("summary %q", sum)
	}
	if q := eval[string](b, "location.search"); !strings.Contains(q, "q=FILE") {
		t.Errorf("filter not in the URL: %q", q)
	}
	checkOrder(t, "server filtered", serverOrder(t, s.URL+"?q=FILE"), []string{"file2.txt", "file10.txt"})
	b.key(kb.Escape)
	checkOrder(t, "filter cleared", eval[[]string](b, rowsJS), byName)

	// Keyboard: from the filter box down the rows, then into a folder and
	// back up.
	const active = `document.activeElement.textContent`
	b.do(chromedp.Focus(chromedp.ID("filter")))
	b.key(kb.ArrowDown)
	if got := eval[string](b, active); got != "a-dir/" {
		t.Errorf("ArrowDown from the filter focused %q", got)
	}
	b.key(kb.ArrowDown)
	if got := eval[string](b, active); got != "B-dir/" {
		t.Errorf("ArrowDown focused %q", got)
	}
	b.key(kb.End)
	if got := eval[string](b, active); got != "Zeta.bin" {
		t.Errorf("End focused %q", got)
	}
	b.key(kb.Home)
	b.screenshot("listing")
	b.key(kb.Enter)
	b.waitJS("the folder page", `location.pathname === "/a-dir/" && document.readyState === "complete"`, 10*time.Second)
	if got := eval[[]string](b, rowsJS); !slices.Equal(got, []string{"inner.txt"}) {
		t.Errorf("a-dir shows %q", got)
	}
	b.key("/")
	if got := eval[string](b, "document.activeElement.id"); got != "filter" {
		t.Errorf("/ focused %q", got)
	}
	b.do(chromedp.Blur(chromedp.ID("filter")))
	b.key(kb.Backspace)
	b.waitJS("the parent page", `location.pathname === "/" && document.readyState === "complete"`, 10*time.Second)
	b.checkPage()

	t.Run("dark", func(t *testing.T) {
		b := b.with(t)
		b.setColorScheme("dark")
		defer b.setColorScheme("light")
		bg := eval[string](b, `getComputedStyle(document.body).backgroundColor`)
		if bg != "rgb(15, 20, 25)" {
			t.Errorf("dark theme background %s", bg)
		}
	})

	t.Run("phone", func(t *testing.T) {
		b := b.with(t)
		b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
		defer b.do(chromedp.ResetViewport())
		b.open(s.URL)
		if d := eval[string](b, `getComputedStyle(document.querySelector("th.mod")).display`); d != "none" {
			t.Errorf("modified column on a phone: display %s", d)
		}
		if eval[bool](b, `document.documentElement.scrollWidth > document.documentElement.clientWidth`) {
			t.Error("the page scrolls sideways on a phone")
		}
	})

	t.Run("without JavaScript", func(t *testing.T) {
		b := b.with(t)
		b.setScripts(false)
		defer b.setScripts(true)
		b.open(s.URL + "?sort=size&order=desc")
		if eval[bool](b, `document.documentElement.classList.contains("js")`) {
			t.Fatal("scripts still ran")
		}
		checkOrder(t, "by size, without JavaScript", eval[[]string](b, rowsJS), bySizeDesc)
		b.do(chromedp.Click(chromedp.CSS(`th a[data-sort="name"]`)))
		b.waitJS("the sorted page", `location.search.includes("sort=name") && document.readyState === "complete"`, 10*time.Second)
		checkOrder(t, "by name, without JavaScript", eval[[]string](b, rowsJS), byName)
		b.do(chromedp.SetValue(chromedp.ID("filter"), "zeta"), chromedp.Click(chromedp.ID("filter-go")))
		b.waitJS("the filtered page", `location.search.includes("q=zeta") && document.readyState === "complete"`, 10*time.Second)
		checkOrder(t, "filtered, without JavaScript", eval[[]string](b, rowsJS), []string{"Zeta.bin"})
	})
	b.checkPage()
}

// reversedFiles reverses the files of an order, keeping folders first
// (and the folders' own order reversed too).
func reversedFiles(order []string) []string {
	out := slices.Clone(order)
	slices.Reverse(out[:2])
	slices.Reverse(out[2:])
	return out
}

// sameQuery reports whether a URL query holds every pair of want.
func sameQuery(got, want string) bool {
	for pair := range strings.SplitSeq(want, "&") {
		if !strings.Contains(got, pair) {
			return false
		}
	}
	return true
}
