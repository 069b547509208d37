//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"largo/internal/poll"
)

// foundJS lists the names the search results show, in order.
const foundJS = `Array.from(document.querySelectorAll("#found-list a"), a => a.textContent)`

// find searches for text below the page's folder and waits for the end.
func (b *browser) find(text string) {
	b.t.Helper()
	b.do(chromedp.SetValue(chromedp.ID("find-text"), text), chromedp.Focus(chromedp.ID("find-text")))
	b.key(kb.Enter)
	b.waitJS("the end of the search for "+text, `document.getElementById("found").dataset.done !== undefined && document.getElementById("found-title").textContent.includes(`+jsQuote(text)+`)`, 60*time.Second)
}

// walkedRe reads a finished search's status: the matches, and the files
// it looked at.
var walkedRe = regexp.MustCompile(`^([\d,]+) matches found among ([\d,]+) files`)

// pieceLog records the pieces of the answers to some requests as the
// page receives them (see recordPieces).
type pieceLog struct {
	b      *browser
	mu     sync.Mutex
	pieces []string
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// recordPieces records, for every request whose URL match accepts, the
// pieces of its answer's body as the browser hands them to the page: what
// came before the request was seen, then each piece as it arrives. A
// piece is what one read of the connection brought, so a body sent in
// one write arrives as one piece.
func (b *browser) recordPieces(match func(url string) bool) *pieceLog {
	b.t.Helper()
	ctx, cancel := context.WithCancel(b.ctx)
	l := &pieceLog{b: b, cancel: cancel}
	var ids sync.Map
	sent := chromedp.Events(ctx, network.RequestWillBeSent)
	data := chromedp.Events(ctx, network.DataReceived)
	l.wg.Add(2)
	go func() {
		defer l.wg.Done()
		for ev, err := range sent {
			if err != nil {
				return
			}
			if !match(ev.Request.URL) {
				continue
			}
			ids.Store(ev.RequestID, true)
			res, err := chromedp.Call(ctx, network.StreamResourceContent, network.StreamResourceContentParams{RequestID: ev.RequestID})
			if err != nil {
				l.add("<streaming refused: " + err.Error() + ">")
			} else if len(res.BufferedData) > 0 {
				l.add(string(res.BufferedData))
			}
		}
	}()
	go func() {
		defer l.wg.Done()
		for ev, err := range data {
			if err != nil {
				return
			}
			if _, ok := ids.Load(ev.RequestID); ok && len(ev.Data) > 0 {
				l.add(string(ev.Data))
			}
		}
	}()
	b.call(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{})
		return err
	})
	return l
}

func (l *pieceLog) add(p string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pieces = append(l.pieces, p)
}

// stop waits until a piece holds last, stops recording and returns the
// pieces.
func (l *pieceLog) stop(last string) []string {
	l.b.t.Helper()
	holds := func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return slices.ContainsFunc(l.pieces, func(p string) bool { return strings.Contains(p, last) })
	}
	ok := poll.Until(10*time.Second, 20*time.Millisecond, holds)
	l.b.call(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.Disable, cdp.Empty{})
		return err
	})
	l.cancel()
	l.wg.Wait()
	if !ok {
		l.b.t.Errorf("no piece of the answer holds %s: %q", last, l.pieces)
	}
	return l.pieces
}

// TestBrowserSearch finds names below a folder that holds a folder of
// 100,000 files, from the page in Chromium: the folder itself, shown
// while the server still walks the 100,000 files in it (the answer
// streams); ten names among them; a name in a folder five levels down
// and in another folder (not the hidden one); a text that matches every
// file (the first 500 shown, the page says there are more, and the walk
// stopped there, far from the end); one that matches nothing. Escape
// closes the results, a result opens its file, and they pass axe-core.
func TestBrowserSearch(t *testing.T) {
	needAxe(t)
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 100_000 {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("file-%06d.dat", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"deep/a/b/c/d/report-2025.pdf", "notes/report-2024.txt", "notes/.report-hidden", "notes/readme.md"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("r"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := startServer(t, dir)
	b := newBrowser(t)
	b.open(s.URL)
	b.waitJS("the search box", `getComputedStyle(document.getElementById("find")).display !== "none"`, 10*time.Second)

	// The folder big matches as the walk meets it, before it goes
	// through the 100,000 files in it: the match reaches the page in a
	// piece of the answer of its own, long before the answer's last line.
	rec := b.recordPieces(func(u string) bool {
		return strings.Contains(u, "/_largo/search?") && strings.Contains(u, "q=big")
	})
	b.find("big")
	if got := eval[[]string](b, foundJS); !slices.Equal(got, []string{"big/"}) {
		t.Errorf("found %q; want the folder big/", got)
	}
	pieces := rec.stop(`"done":true`)
	matched := slices.IndexFunc(pieces, func(p string) bool { return strings.Contains(p, `"href":"./big/"`) })
	switch {
	case matched < 0:
		t.Errorf("no piece of the answer holds the match: %q", pieces)
	case strings.Contains(pieces[matched], `"done":true`):
		t.Errorf("the match came with the answer's end, not as it was found: %q", pieces)
	}
	if status := eval[string](b, `document.getElementById("found-status").textContent`); status != "1 match found among 100,003 files and 7 folders." {
		t.Errorf("status %q", status)
	}

	b.find("FILE-04242")
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("big/file-04242%d.dat", i))
	}
	got := eval[[]string](b, foundJS)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("found %q; want %q", got, want)
	}
	if status := eval[string](b, `document.getElementById("found-status").textContent`); status != "10 matches found among 100,003 files and 7 folders." {
		t.Errorf("status %q", status)
	}
	if href := eval[string](b, `document.querySelector("#found-list a").getAttribute("href")`); !strings.HasPrefix(href, "./big/file-04242") {
		t.Errorf("a result links to %q", href)
	}
	b.screenshot("search")
	b.checkAccessibility("search results")

	b.find("report")
	got = eval[[]string](b, foundJS)
	slices.Sort(got)
	if want := []string{"deep/a/b/c/d/report-2025.pdf", "notes/report-2024.txt"}; !slices.Equal(got, want) {
		t.Errorf("found %q; want %q", got, want)
	}

	b.find("file-")
	if n := eval[int](b, `document.querySelectorAll("#found-list li").length`); n != 500 {
		t.Errorf("%d results shown; want the first 500", n)
	}
	status := eval[string](b, `document.getElementById("found-status").textContent`)
	if !strings.Contains(status, "Only the first 500 are shown") {
		t.Errorf("status %q", status)
	}
	// The server stopped at the limit: it did not walk the rest of big.
	if m := walkedRe.FindStringSubmatch(status); m == nil || m[1] != "500" {
		t.Errorf("status %q; want 500 matches", status)
	} else if n, _ := strconv.Atoi(strings.ReplaceAll(m[2], ",", "")); n >= 100_000 {
		t.Errorf("the search stopped at its limit having looked at %d files: it walked the whole folder", n)
	}

	b.find("nothing-is-named-so")
	if status := eval[string](b, `document.getElementById("found-status").textContent`); status != "Nothing found among 100,003 files and 7 folders." {
		t.Errorf("status %q", status)
	}
	b.key(kb.Escape)
	b.waitJS("the results closed", `document.getElementById("found").hidden`, 10*time.Second)

	// A result opens its folder's file.
	b.find("readme")
	b.do(chromedp.Click(chromedp.CSS("#found-list a")))
	b.waitJS("the file", `location.pathname === "/notes/readme.md"`, 10*time.Second)
	b.checkPage()
}

// TestBrowserManagePhone: the file manager on a phone's width, with the
// keyboard: nothing wider than the screen, the columns shown filling the
// table, a row's menu and the dialogs inside it, and axe-core's rules.
func TestBrowserManagePhone(t *testing.T) {
	needAxe(t)
	g := &target{kind: "disk", dir: t.TempDir()}
	s := manageServer(t, g)
	b := newBrowser(t)
	b.openOnPhone(s.URL+"work/", "alice", aliceBrowserPassword)
	b.waitJS("the tools", `!document.getElementById("tools").hidden`, 10*time.Second)
	const sideways = `document.documentElement.scrollWidth > document.documentElement.clientWidth`
	if eval[bool](b, sideways) {
		t.Error("the page scrolls sideways on a phone")
	}
	b.checkColumns("on a phone")
	// From the keyboard: a row, its menu, a rename.
	b.do(chromedp.Focus(chromedp.CSS(rowSel("notes.txt") + " td.name a")))
	b.key(" ")
	b.waitSelection()
	b.do(chromedp.KeyEvent(kb.F10, chromedp.KeyModifiers(kb.ModifierShift)))
	b.waitJS("the menu", `document.getElementById("row-menu").dataset.ready !== undefined`, 10*time.Second)
	if eval[bool](b, `(r => r.left < 0 || r.right > document.documentElement.clientWidth)(document.getElementById("row-menu").getBoundingClientRect())`) {
		t.Error("the menu leaves the screen")
	}
	if got := eval[string](b, `document.activeElement.dataset.act`); got != "preview" {
		t.Errorf("the menu's focus is on %q; want its first item", got)
	}
	b.waitJS("the menu's actions", `document.querySelector('#row-menu button[data-act="rename"]') !== null`, 10*time.Second)
	b.key(kb.ArrowDown)
	b.key(kb.ArrowDown)
	if got := eval[string](b, `document.activeElement.dataset.act`); got != "rename" {
		t.Fatalf("two steps down the menu is %q; want rename", got)
	}
	b.screenshot("phone")
	b.checkAccessibility("the managed page on a phone, its menu open")
	b.key(kb.Enter)
	b.waitDialog("ask")
	if eval[bool](b, `(r => r.left < 0 || r.right > document.documentElement.clientWidth)(document.getElementById("ask").getBoundingClientRect())`) {
		t.Error("the dialog leaves the screen")
	}
	b.do(chromedp.SetValue(chromedp.ID("ask-name"), "phone.txt"))
	b.key(kb.Enter)
	b.waitJS("the renamed row", hasRow("phone.txt"), 10*time.Second)
	if got := readFile(t, filepath.Join(g.dir, "work", "phone.txt")); got != "notes" {
		t.Errorf("phone.txt holds %q", got)
	}
	if eval[bool](b, sideways) {
		t.Error("the page scrolls sideways after a change")
	}
	b.checkPage()

	// Without the script the columns of checkboxes and menus are gone;
	// the others fill the table all the same.
	t.Run("without JavaScript", func(t *testing.T) {
		b := b.with(t)
		b.setScripts(false)
		defer b.setScripts(true)
		b.open(s.URL + "work/")
		if eval[bool](b, `document.documentElement.classList.contains("js")`) {
			t.Fatal("the page's script ran")
		}
		b.checkColumns("on a phone without JavaScript")
		b.do(chromedp.ResetViewport())
		b.open(s.URL + "work/")
		b.checkColumns("without JavaScript")
	})
}

// checkColumns fails the test unless the columns shown in the folder's
// table fill its width: a row that spans them all (the parent folder's)
// must not span one the rows do not have, which would take the room.
func (b *browser) checkColumns(where string) {
	b.t.Helper()
	gap := eval[float64](b, `(t => t.getBoundingClientRect().right - Math.max(...Array.from(t.querySelectorAll("thead th"), th => th.getBoundingClientRect().right)))(document.getElementById("files"))`)
	if gap > 1 || gap < -1 {
		b.t.Errorf("%s, the table's columns end %.0f px before its right edge", where, gap)
	}
}
