package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// throttleUploads caps the browser's upload rate, so that an upload of a
// few hundred MiB on loopback lasts long enough to be watched, paused and
// cut by a reload.
func (b *browser) throttleUploads(bytesPerSecond float64) {
	b.t.Helper()
	b.call(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := cdp.Call(ctx, t, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, t, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{UploadThroughput: bytesPerSecond, DownloadThroughput: -1}},
		})
		return err
	})
}

// unlock opens a folder page and gives it the token.
func (b *browser) unlock(url, token string) {
	b.t.Helper()
	b.open(url)
	b.waitJS("the token form", `!document.getElementById("token-form").hidden`, 10*time.Second)
	b.do(chromedp.SetValue(chromedp.ID("token"), token), chromedp.Click(chromedp.CSS("#token-form button")))
	b.waitJS("the drop area", `!document.getElementById("drop").hidden`, 10*time.Second)
}

// rowJS is the upload row of a file, by the name it shows.
func rowJS(label string) string {
	return `Array.from(document.querySelectorAll("#upload-list li")).find(li => li.querySelector(".up-name").textContent === ` + jsQuote(label) + `)`
}

func jsQuote(s string) string {
	return "`" + strings.NewReplacer("\\", "\\\\", "`", "\\`", "$", "\\$").Replace(s) + "`"
}

// progress returns the value of a row's progress bar, or -1.
func (b *browser) progress(label string) float64 {
	return eval[float64](b, `(`+rowJS(label)+`)?.querySelector("progress").value ?? -1`)
}

// TestBrowserUpload uploads a 200 MiB file through the page's file picker,
// with the token asked for once, watches the progress bar advance, reloads
// the page in the middle, chooses the file again and sees the upload
// resume where the server says it stopped, and finish; the stored file's
// sha256 matches and the listing shows it.
func TestBrowserUpload(t *testing.T) {
	root := t.TempDir()
	seedInbox(t, filepath.Join(root, "inbox"))
	src := filepath.Join(t.TempDir(), "big.bin")
	want := writeRandom(t, src, 200<<20, 42)
	s := startServer(t, root, "--upload", "--token", "tok-123")
	b := newBrowser(t)
	b.throttleUploads(40 << 20)

	// The token: a wrong one is refused in the page, no browser dialog.
	b.open(s.URL + "inbox/")
	b.waitJS("the token form", `!document.getElementById("token-form").hidden`, 10*time.Second)
	b.do(chromedp.SetValue(chromedp.ID("token"), "wrong"), chromedp.Click(chromedp.CSS("#token-form button")))
	b.waitJS("the refusal", `document.getElementById("token-error").textContent.includes("refused")`, 10*time.Second)
	b.unlock(s.URL+"inbox/", "tok-123")

	b.screenshot("folder")
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
	b.waitJS("progress", `(`+rowJS("big.bin")+`)?.querySelector("progress").value > 0.08`, 30*time.Second)
	p1 := b.progress("big.bin")
	b.waitJS("more progress", `(`+rowJS("big.bin")+`)?.querySelector("progress").value > `+ftoa(p1+0.05), 30*time.Second)
	foot := eval[string](b, `(`+rowJS("big.bin")+`)?.querySelector(".up-foot").textContent`)
	if !regexp.MustCompile(`MiB of 200 MiB.*MiB/s.*left`).MatchString(foot) {
		t.Errorf("row shows %q; want bytes, rate and time left", foot)
	}
	if sum := eval[string](b, `document.getElementById("upload-summary").textContent`); !strings.Contains(sum, "0 of 1 file uploaded") {
		t.Errorf("summary %q", sum)
	}
	b.screenshot("upload")
	b.checkAccessibility("upload in progress")

	// Reload in the middle: the page lists the unfinished upload.
	b.waitJS("a third of the file", `(`+rowJS("big.bin")+`)?.querySelector("progress").value > 0.3`, 30*time.Second)
	before := b.progress("big.bin")
	if before >= 0.9 {
		t.Fatalf("upload too far (%.2f) to test a resume", before)
	}
	b.do(chromedp.Reload())
	b.waitJS("the unfinished upload", `(`+rowJS("big.bin")+`)?.dataset.state === "interrupted"`, 15*time.Second)
	held := b.progress("big.bin")
	if held <= 0 || held > before+0.1 {
		t.Errorf("after the reload the server holds %.2f of the file; the bar showed %.2f", held, before)
	}

	// The same file again: the upload resumes, not restarts.
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
	b.waitJS("the resumed upload", `(`+rowJS("big.bin")+`)?.querySelector(".up-state").textContent.includes("resumed at")`, 15*time.Second)
	b.waitJS("the end of the upload", `(`+rowJS("big.bin")+`)?.dataset.state === "done"`, 60*time.Second)
	b.waitJS("the refreshed listing", `document.querySelector('#files tr[data-name="big.bin"]') !== null`, 10*time.Second)
	if got := fileSHA(t, filepath.Join(root, "inbox", "big.bin")); got != want {
		t.Errorf("stored file sha256 %s; want %s", got, want)
	}
	if n := eval[int](b, `Object.keys(localStorage).filter(k => k.startsWith("largo.upload ")).length`); n != 0 {
		t.Errorf("%d upload URLs left in the browser's storage", n)
	}
	log := s.stderr.String()
	if n := strings.Count(log, "method=POST path=/_largo/uploads/ "); n != 1 {
		t.Errorf("%d uploads created; want 1 (the second choice of the file must resume)", n)
	}
	if !regexp.MustCompile(`method=HEAD path=/_largo/uploads/\w+ status=200`).MatchString(log) {
		t.Error("no HEAD asked the server for the offset")
	}
	if sum := eval[string](b, `document.getElementById("upload-summary").textContent`); !strings.Contains(sum, "1 file uploaded, 200 MiB") {
		t.Errorf("summary %q", sum)
	}
	b.checkPage()
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// seedInbox fills a folder with what a file server holds (large files are
// sparse), for the screenshots.
func seedInbox(t *testing.T, dir string) {
	t.Helper()
	at := time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)
	for i, f := range []struct {
		name string
		size int64
	}{
		{"backup-2025-03.tar.zst", 12<<30 + 345<<20},
		{"holiday-2024.mp4", 1<<30 + 420<<20},
		{"ubuntu-24.04-desktop-amd64.iso", 5<<30 + 700<<20},
		{"dataset/train-00001.parquet", 800 << 20},
		{"photos/IMG_0001.jpg", 4 << 20},
		{"notes.md", 2300},
	} {
		p := filepath.Join(dir, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, f.size); err != nil {
			t.Fatal(err)
		}
		mt := at.Add(-time.Duration(i) * 26 * time.Hour)
		os.Chtimes(p, mt, mt)
		os.Chtimes(filepath.Dir(p), mt, mt)
	}
}
