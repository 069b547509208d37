//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"largo/internal/poll"
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

// openToUpload opens a folder page, signs in with user and password (as
// the user named as), and waits for the upload area.
func (b *browser) openToUpload(url, user, password, as string) {
	b.t.Helper()
	b.open(url)
	b.signIn(user, password, as)
	b.waitJS("the upload area", `!document.getElementById("upload").hidden`, 10*time.Second)
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

// TestBrowserUpload signs in as a user of an access file, uploads a 200
// MiB file through the page's file picker, watches the progress bar
// advance, reloads the page in the middle, chooses the file again and sees
// the upload resume where the server says it stopped, and finish; the
// stored file's sha256 matches and the listing shows it.
func TestBrowserUpload(t *testing.T) {
	root := t.TempDir()
	seedInbox(t, filepath.Join(root, "inbox"))
	src := filepath.Join(t.TempDir(), "big.bin")
	want := writeRandom(t, src, 200<<20, 42)
	s := startServer(t, root, "--access", writeAccessFile(t, aliceAccess))
	b := newBrowser(t)
	b.throttleUploads(40 << 20)
	b.openToUpload(s.URL+"inbox/", "alice", aliceBrowserPassword, "alice")

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
	if held <= 0 || held > before+0.3 {
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
	if news := eval[string](b, `document.getElementById("upload-news").textContent`); news != "big.bin uploaded." {
		t.Errorf("announced %q", news)
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

// pendingUploads lists what the server holds of unfinished resumable
// uploads.
func pendingUploads(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, ".largo", "tus"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// dropFiles drops files and folders from this machine on the page, as a
// user dragging them from a file manager would.
func (b *browser) dropFiles(paths ...string) {
	b.t.Helper()
	ev := func(typ input.DispatchDragEventType) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, input.DispatchDragEvent, input.DispatchDragEventParams{
				Type: typ, X: 400, Y: 300,
				Data: &input.DragData{Items: []*input.DragDataItem{}, Files: paths, DragOperationsMask: 1},
			})
			return err
		})
	}
	b.do(ev(input.DispatchDragEventTypeDragEnter), ev(input.DispatchDragEventTypeDragOver), ev(input.DispatchDragEventTypeDrop))
}

// TestBrowserUploadControls drops a folder on the page and picks another
// (relative paths become folders on the server, hidden names are
// skipped), pauses and resumes an upload, cancels one (terminated on the
// server), and sends several files at once, never more than three at a
// time.
func TestBrowserUploadControls(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "in"), 0o755)
	srcs := t.TempDir()
	sums := map[string]string{}
	put := func(rel string, size int64, seed uint64) string {
		p := filepath.Join(srcs, rel)
		sums[rel] = writeRandom(t, p, size, seed)
		return p
	}
	put("album/a.jpg", 1000, 1)
	put("album/sub/b.jpg", 300<<10, 2)
	put("album/.thumbs/x", 10, 3)
	put("notes/one.txt", 5, 4)
	put("notes/deeper/two.txt", 6, 5)
	put("notes/empty.txt", 0, 0)
	paused := put("p.bin", 48<<20, 6)
	cancelled := put("c.bin", 48<<20, 7)
	var many []string
	for i := range 5 {
		many = append(many, put(fmt.Sprintf("many-%d.bin", i), 6<<20, uint64(10+i)))
	}
	stored := func(rel string) {
		t.Helper()
		if got := fileSHA(t, filepath.Join(root, "in", rel)); got != sums[rel] {
			t.Errorf("%s: stored sha256 %s; want %s", rel, got, sums[rel])
		}
	}

	s := startServer(t, root, "--upload", "--token", "tok-for-the-controls")
	b := newBrowser(t)
	b.throttleUploads(16 << 20)
	// The one-user token signs in as the password, under any name.
	b.openToUpload(s.URL+"in/", "anyone", "tok-for-the-controls", "anyone")

	t.Run("drop a folder", func(t *testing.T) {
		b := b.with(t)
		b.dropFiles(filepath.Join(srcs, "album"))
		b.waitJS("both files", rowJS("album/a.jpg")+`?.dataset.state === "done" && `+rowJS("album/sub/b.jpg")+`?.dataset.state === "done"`, 20*time.Second)
		stored("album/a.jpg")
		stored("album/sub/b.jpg")
		if _, err := os.Stat(filepath.Join(root, "in", "album", ".thumbs")); err == nil {
			t.Error("a hidden folder was uploaded")
		}
		if sum := eval[string](b, `document.getElementById("upload-summary").textContent`); !strings.Contains(sum, "1 hidden name skipped") {
			t.Errorf("summary %q", sum)
		}
		b.waitJS("the refreshed listing", `document.querySelector('#files tr[data-name="album"]') !== null`, 10*time.Second)
	})

	t.Run("pick a folder", func(t *testing.T) {
		b := b.with(t)
		b.do(chromedp.SetUploadFiles(chromedp.ID("pick-folder"), []string{filepath.Join(srcs, "notes")}))
		b.waitJS("the three files", rowJS("notes/one.txt")+`?.dataset.state === "done" && `+rowJS("notes/deeper/two.txt")+`?.dataset.state === "done" && `+rowJS("notes/empty.txt")+`?.dataset.state === "done"`, 20*time.Second)
		stored("notes/one.txt")
		stored("notes/deeper/two.txt")
		stored("notes/empty.txt")
	})

	t.Run("pause and resume", func(t *testing.T) {
		needAxe(t) // now, not while the upload is paused: it would be left so
		b := b.with(t)
		b.pickAndPress(paused, ".up-pause", "paused")
		// What was in flight when the request was cut may still land; then
		// the server's bytes stay as they are (five reads over a second).
		held, settled := poll.Steady(15*time.Second, 250*time.Millisecond, 5, func() int64 { return pendingSize(t, root) })
		if !settled || held <= 0 {
			t.Errorf("paused upload: the server's bytes did not settle above zero in 15s (last %d)", held)
		}
		if label := eval[string](b, rowJS("p.bin")+`.querySelector(".up-pause").textContent`); label != "Resume" {
			t.Errorf("the pause button reads %q while paused", label)
		}
		b.checkAccessibility("upload rows: done and paused")
		b.press("p.bin", ".up-pause")
		b.waitJS("the end", rowJS("p.bin")+`?.dataset.state === "done"`, 30*time.Second)
		stored("p.bin")
	})

	t.Run("cancel", func(t *testing.T) {
		b := b.with(t)
		b.pickAndPress(cancelled, ".up-cancel", "cancelled")
		if !waitFor(5*time.Second, func() bool { return len(pendingUploads(t, root)) == 0 }) {
			t.Errorf("the server still holds %q after a cancel", pendingUploads(t, root))
		}
		if _, err := os.Stat(filepath.Join(root, "in", "c.bin")); err == nil {
			t.Error("a cancelled upload was stored")
		}
		if n := eval[int](b, `Object.keys(localStorage).filter(k => k.startsWith("largo.upload ")).length`); n != 0 {
			t.Errorf("%d upload URLs left in the browser's storage", n)
		}
	})

	t.Run("several at once", func(t *testing.T) {
		b := b.with(t)
		eval[chromedp.Void](b, `window.mostAtOnce = 0; window.sampler = setInterval(() => {
			const n = document.querySelectorAll('#upload-list li[data-state="uploading"]').length;
			window.mostAtOnce = Math.max(window.mostAtOnce, n);
		}, 20)`)
		b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), many))
		b.waitJS("all five", `Array.from(document.querySelectorAll('#upload-list li[data-state="done"] .up-name')).filter(n => n.textContent.startsWith("many-")).length === 5`, 60*time.Second)
		most := eval[int](b, `(clearInterval(window.sampler), window.mostAtOnce)`)
		if most < 2 || most > 3 {
			t.Errorf("%d uploads ran at once; want 2 or 3 (the limit is 3)", most)
		}
		for i := range 5 {
			stored(fmt.Sprintf("many-%d.bin", i))
		}
		b.waitJS("the refreshed listing", `document.querySelector('#files tr[data-name="many-4.bin"]') !== null`, 10*time.Second)
	})
	b.checkPage()
}

// pendingSize is the bytes the server holds of unfinished uploads.
func pendingSize(t *testing.T, root string) int64 {
	t.Helper()
	var n int64
	for _, name := range pendingUploads(t, root) {
		if strings.Contains(name, ".") {
			continue // the upload's metadata and state, not its bytes
		}
		if fi, err := os.Stat(filepath.Join(root, ".largo", "tus", name)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// TestBrowserUploadLostConnection kills the server in the middle of an
// upload and starts it again on the same address: the page retries,
// asks the server for its offset and finishes without starting over.
func TestBrowserUploadLostConnection(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "in"), 0o755)
	src := filepath.Join(t.TempDir(), "cut.bin")
	want := writeRandom(t, src, 96<<20, 77)
	s := startServer(t, root, "--upload", "--token", "tok-for-the-lost-one")
	b := newBrowser(t)
	b.throttleUploads(24 << 20)
	b.openToUpload(s.URL+"in/", "anyone", "tok-for-the-lost-one", "anyone")
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
	b.waitJS("progress", rowJS("cut.bin")+`?.querySelector("progress").value > 0.2`, 20*time.Second)

	s.cmd.Process.Kill()
	s.wait(10 * time.Second)
	b.waitJS("the retry", rowJS("cut.bin")+`?.dataset.state === "retrying"`, 20*time.Second)
	s2 := startServer(t, root, "--upload", "--token", "tok-for-the-lost-one", "--listen", s.Addr)
	b.waitJS("the end", rowJS("cut.bin")+`?.dataset.state === "done"`, 60*time.Second)
	if got := fileSHA(t, filepath.Join(root, "in", "cut.bin")); got != want {
		t.Errorf("stored sha256 %s; want %s", got, want)
	}
	if strings.Contains(s2.stderr.String(), "method=POST path=/_largo/uploads/ ") {
		t.Error("the upload started over on the restarted server")
	}
	b.checkPage()
}

// pickAndPress chooses a file, waits until a tenth of it is sent, presses
// one of its row's buttons and waits for the row to reach state.
func (b *browser) pickAndPress(path, button, state string) {
	b.t.Helper()
	label := filepath.Base(path)
	b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{path}))
	b.waitJS("progress", rowJS(label)+`?.querySelector("progress").value > 0.1`, 20*time.Second)
	b.press(label, button)
	b.waitJS(state, rowJS(label)+`?.dataset.state === "`+state+`"`, 5*time.Second)
}

// press clicks a button of a file's upload row.
func (b *browser) press(label, button string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.JSPath(rowJS(label) + `.querySelector("` + button + `")`)))
}
