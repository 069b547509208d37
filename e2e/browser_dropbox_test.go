//go:build e2e

package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// dropBoxSize is the file a stranger sends through a drop box in
// TestDropBoxPage: 2 GiB. It is a file on this machine's disk, chosen in
// the page's picker as a person would, rather than one made in the page:
// the Chromium the tests drive keeps a page's Blobs in memory only, and
// refuses to read one of 1 GiB or more.
const dropBoxSize = 2 << 30

// dropBoxServer serves a folder with files a drop box's holder must not
// see, and returns it and the drop box's URL.
func dropBoxServer(t *testing.T, root string, args ...string) (*server, string) {
	t.Helper()
	seedInbox(t, filepath.Join(root, "inbox"))
	s := startServer(t, root, "--upload", "--token", "the-owner-token-0123456789")
	drop := shareLink(t, &target{kind: "disk", dir: root}, s, "/inbox", append([]string{"--write"}, args...)...)
	return s, drop
}

// TestDropBoxPage: a stranger given only a drop box's link opens it in
// Chromium and finds a page to send files, which says what the link
// takes and shows nothing of the folder; they send a file of
// dropBoxSize in pieces over several connections,
// reload the page in the middle, choose the same file again and see the
// upload resume and end; the file lands whole (with the SHA-256 of the
// file sent), and the page lists it as sent from this browser, and
// only it. A name already taken is refused in words; without JavaScript,
// the page's form sends files and answers with what it stored.
func TestDropBoxPage(t *testing.T) {
	root := t.TempDir()
	s, drop := dropBoxServer(t, root, "--file-ttl", "7d", "--max-upload", "3GiB")
	secrets := []string{"backup-2025-03", "holiday-2024", "notes.md", "dataset", "inbox"}
	b := newBrowser(t)
	b.open(drop)
	b.waitJS("the uploader", `!document.getElementById("upload").hidden && document.getElementById("send-form").hidden`, 10*time.Second)
	page := eval[string](b, `document.documentElement.outerHTML`)
	for _, secret := range secrets {
		if strings.Contains(page, secret) {
			t.Errorf("the drop box's page shows %q", secret)
		}
	}
	terms := eval[string](b, `document.querySelector(".terms").textContent`)
	for _, want := range []string{"Each file may be up to 3 GiB.", "A name already taken here is refused", "removed 7 days after it arrives", "This link works until", "UTC"} {
		if !strings.Contains(terms, want) {
			t.Errorf("the page says %q; want %q in it", terms, want)
		}
	}
	if eval[bool](b, `document.getElementById("choose-folder") !== null`) {
		t.Error("the drop box's page offers to send a folder")
	}

	const name = "big.bin"
	src := filepath.Join(t.TempDir(), name)
	sum := writeRandom(t, src, dropBoxSize, 7)
	b.throttleUploads(96 << 20)
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
	b.waitJS("progress", `(`+rowJS(name)+`)?.querySelector("progress").value > 0.05`, 60*time.Second)
	b.screenshot("dropbox")
	b.checkAccessibility("the drop box's page, uploading")
	b.waitJS("a quarter of the file", `(`+rowJS(name)+`)?.querySelector("progress").value > 0.25`, 120*time.Second)
	before := b.progress(name)
	if before >= 0.9 {
		t.Fatalf("upload too far (%.2f) to test a resume", before)
	}
	b.do(chromedp.Reload())
	b.waitJS("the unfinished upload", `(`+rowJS(name)+`)?.dataset.state === "interrupted"`, 15*time.Second)
	if held := b.progress(name); held <= 0 || held > before+0.3 {
		t.Errorf("after the reload the page holds %.2f of the file; the bar showed %.2f", held, before)
	}
	b.throttleUploads(-1)
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
	b.waitJS("the resumed upload", `(`+rowJS(name)+`)?.querySelector(".up-state").textContent.includes("resumed at")`, 30*time.Second)
	b.waitJS("the end of the upload", `(`+rowJS(name)+`)?.dataset.state === "done"`, 10*time.Minute)
	if got := fileSHA(t, filepath.Join(root, "inbox", name)); got != sum {
		t.Errorf("the landed file's sha256 %s; the file sent has %s", got, sum)
	}
	if got := eval[[]string](b, `Array.from(document.querySelectorAll("#sent-list .sent-name"), n => n.textContent)`); len(got) != 1 || got[0] != name {
		t.Errorf("the page lists as sent %q; want %s alone", got, name)
	}
	if n := eval[int](b, `Object.keys(localStorage).filter(k => k.startsWith("largo.upload ")).length`); n != 0 {
		t.Errorf("%d uploads left in the browser's storage", n)
	}
	// Each piece is created once, and the final once: the pieces sent
	// before the reload were not sent again (a piece whose creation was
	// in flight at the reload may be made twice).
	log := s.stderr.String()
	pieces := int((dropBoxSize + 16<<20 - 1) / (16 << 20))
	if n := strings.Count(log, "method=POST path="+strings.TrimPrefix(drop, strings.TrimSuffix(s.URL, "/"))+"_largo/uploads/ "); n < pieces+1 || n > pieces+1+4 {
		t.Errorf("%d creations through the drop box; want the %d pieces and the final, and at most 4 more", n, pieces)
	}
	if !regexp.MustCompile(`method=HEAD path=/_largo/uploads/\w+ status=200`).MatchString(log) {
		t.Error("no piece asked the server for its offset after the reload")
	}
	if strings.Contains(log, "format=json") {
		t.Error("the page asked for a listing")
	}

	t.Run("a name taken", func(t *testing.T) {
		b := b.with(t)
		taken := filepath.Join(t.TempDir(), "notes.md")
		writeRandom(t, taken, 1000, 1)
		b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{taken}))
		b.waitJS("the refusal", `(`+rowJS("notes.md")+`)?.dataset.state === "failed"`, 15*time.Second)
		if got := eval[string](b, `(`+rowJS("notes.md")+`).querySelector(".up-state").textContent`); got != "Failed: a file of this name is here already: rename yours and send it again" {
			t.Errorf("the row says %q", got)
		}
		if fi, err := os.Stat(filepath.Join(root, "inbox", "notes.md")); err != nil || fi.Size() != 2300 {
			t.Errorf("notes.md after a refused upload: %v", err)
		}
	})
	b.checkPage()

	t.Run("without JavaScript", func(t *testing.T) {
		b := newBrowser(t)
		src := filepath.Join(t.TempDir(), "report.pdf")
		want := writeRandom(t, src, 3<<20, 11)
		b.setScripts(false)
		b.open(drop)
		if !eval[bool](b, `!document.getElementById("send-form").hidden && document.getElementById("upload").hidden`) {
			t.Fatal("without JavaScript the page offers no form")
		}
		b.setScripts(true)
		b.checkAccessibility("the drop box's page without JavaScript")
		b.setScripts(false)
		b.do(chromedp.SetUploadFiles(chromedp.ID("send-files"), []string{src}))
		b.do(chromedp.Click(chromedp.CSS(`#send-form button[type="submit"]`)))
		b.waitJS("the answer", `document.querySelector("#sent-list .sent-name")?.textContent === "report.pdf"`, 30*time.Second)
		if got := eval[string](b, `document.querySelector("#sent-list li").textContent`); !strings.Contains(got, "3 MiB") || !strings.Contains(got, want) {
			t.Errorf("the page lists %q; want the size and the SHA-256 %s", got, want)
		}
		if got := fileSHA(t, filepath.Join(root, "inbox", "report.pdf")); got != want {
			t.Errorf("the landed file's sha256 %s; want %s", got, want)
		}
		b.checkPage()
	})
}

// writeOnlyAccess: everyone reads and lists, but /inbox, where alice
// writes and sees nothing.
const writeOnlyAccess = `
[[user]]
name = "alice"
password = "ALICE_HASH"

[[rule]]
path = "/"
users = ["*"]
allow = ["read", "list"]

[[rule]]
path = "/inbox"
users = ["*"]
allow = []

[[rule]]
path = "/inbox"
users = ["alice"]
allow = ["write"]
`

// TestDropBoxWriteOnly: a user who may write in a folder and not list it
// gets the upload page there instead of a refusal, uploads to it, and
// sees what they sent and nothing else.
func TestDropBoxWriteOnly(t *testing.T) {
	root := t.TempDir()
	seedInbox(t, filepath.Join(root, "inbox"))
	s := startServer(t, root, "--access", writeAccessFile(t, writeOnlyAccess))
	src := filepath.Join(t.TempDir(), "scan.pdf")
	want := writeRandom(t, src, 5<<20, 3)
	b := newBrowser(t)
	b.open(s.URL)
	b.signIn("alice", aliceBrowserPassword, "alice")
	b.open(s.URL + "inbox/")
	b.waitJS("the uploader", `!document.getElementById("upload").hidden`, 10*time.Second)
	if got := eval[string](b, `document.querySelector("h1").textContent`); got != "Upload to /inbox/" {
		t.Errorf("the heading %q", got)
	}
	if got := eval[string](b, whoJS); !strings.HasPrefix(got, "Signed in as alice · here you may write") {
		t.Errorf("the page says %q", got)
	}
	if page := eval[string](b, `document.body.innerHTML`); strings.Contains(page, "holiday-2024") || strings.Contains(page, "notes.md") {
		t.Error("the upload page shows the folder's files")
	}
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
	b.waitJS("the end of the upload", rowJS("scan.pdf")+`?.dataset.state === "done"`, 30*time.Second)
	b.waitJS("the list of what was sent", `document.querySelector("#sent-list .sent-name")?.textContent === "scan.pdf"`, 5*time.Second)
	if got := fileSHA(t, filepath.Join(root, "inbox", "scan.pdf")); got != want {
		t.Errorf("stored sha256 %s; want %s", got, want)
	}
	b.checkAccessibility("a write-only folder's upload page")
	b.checkPage()
	if _, err := os.Stat(filepath.Join(root, "inbox", "scan.pdf")); err != nil {
		t.Error(err)
	}
}
