//go:build e2e

package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cdptarget "github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"largo/internal/poll"
	"largo/internal/testenv"
	"largo/proc"
)

// previewFolder writes one file of each kind a page previews, and returns
// the size of the video.
func previewFolder(t *testing.T, dir string) int64 {
	t.Helper()
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var log strings.Builder
	for i := 0; log.Len() < 5<<19; i++ { // 2.5 MiB
		fmt.Fprintf(&log, "%06d the quick brown fox jumps over the lazy dog\n", i)
	}
	write("big.log", []byte(log.String()))
	write("hello.md", []byte("# Hello\n\nA *small* file, shown whole.\n"))
	write("doc.pdf", minimalPDF("Hello from a PDF"))
	write("evil.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg" onload="top.document.title='pwned'"><script>top.document.title='pwned'</script></svg>`))
	write("fake.pdf", []byte(`<!doctype html><script>top.document.title='pwned'</script>`))
	write("photo.png", pngImage(t, 320, 200))
	write("tone.wav", wavTone(2, 8000))
	return makeVideo(t, filepath.Join(dir, "film.webm"))
}

// minimalPDF is a one-page PDF that shows text.
func minimalPDF(text string) []byte {
	stream := "BT /F1 24 Tf 40 100 Td (" + text + ") Tj ET"
	objs := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 200] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	var offsets []int
	for i, o := range objs {
		offsets = append(offsets, b.Len())
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func pngImage(t *testing.T, w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), 160, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// wavTone is seconds of a 440 Hz tone, 16-bit mono PCM at rate.
func wavTone(seconds, rate int) []byte {
	n := seconds * rate
	var b bytes.Buffer
	le := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("RIFF")
	le(uint32(36 + 2*n))
	b.WriteString("WAVEfmt ")
	le(uint32(16))
	le(uint16(1))
	le(uint16(1))
	le(uint32(rate))
	le(uint32(2 * rate))
	le(uint16(2))
	le(uint16(16))
	b.WriteString("data")
	le(uint32(2 * n))
	for i := range n {
		le(int16(8000 * math.Sin(2*math.Pi*440*float64(i)/float64(rate))))
	}
	return b.Bytes()
}

// makeVideo writes a WebM film of 16 minutes with ffmpeg, of about 240
// MB: four seconds of noisy frames at 2 Mbit/s, encoded once and
// repeated, with the index (cues) that lets a player seek.
func makeVideo(t *testing.T, path string) int64 {
	t.Helper()
	ffmpeg := testenv.Program(t, "ffmpeg")
	short := filepath.Join(t.TempDir(), "short.webm")
	for _, args := range [][]string{
		{"-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=4", "-vf", "noise=alls=30:allf=t",
			"-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "2M", "-minrate", "2M", "-maxrate", "2M", "-g", "25", "-an", short},
		{"-stream_loop", "239", "-i", short, "-c", "copy", path},
	} {
		out, err := exec.Command(ffmpeg, append([]string{"-loglevel", "error", "-y"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ffmpeg: %v\n%s", err, out)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// previewed waits until the preview shows name.
func (b *browser) previewed(name string) {
	b.t.Helper()
	b.waitJS("the preview of "+name, `document.getElementById("preview").open && document.getElementById("preview-title").textContent === `+jsQuote(name), 10*time.Second)
}

// rangeStarts returns the first byte of each range request of path the
// server answered, from its access log.
func rangeStarts(s *server, path string) []int64 {
	var starts []int64
	re := regexp.MustCompile(`method=GET path=` + regexp.QuoteMeta(path) + ` status=206 .* range="?bytes=(\d+)-`)
	for _, m := range re.FindAllStringSubmatch(s.stderr.String(), -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		starts = append(starts, n)
	}
	return starts
}

// TestBrowserPreview previews a file of each kind in Chromium, from a
// row's key and then with the panel's next and previous: a text cut to
// its first MiB (one range request, and a note that says so), a PDF in
// the browser's own viewer, an SVG with a script shown as text, HTML
// named as a PDF that runs nothing, a film of 16 minutes sought near its
// end by range requests having read a small part of it, a small text, an
// image, a sound. Nothing is fetched before it is asked for, and the
// panel passes axe-core.
func TestBrowserPreview(t *testing.T) {
	needAxe(t)
	dir := t.TempDir()
	filmSize := previewFolder(t, dir)
	// The film's first request asks for all of it (bytes=0-); the player
	// drops it once it has read the head. On a loaded machine, over the
	// loopback, the whole film could arrive before the browser got round
	// to that (and the later range was then answered from its cache):
	// a cap of 32 MB/s leaves it the seconds a busy machine needs.
	s := startServer(t, dir, "--rate-per-address", "32MB")
	b := newBrowser(t)
	b.open(s.URL)
	b.waitJS("the page's script", `document.documentElement.classList.contains("js")`, 10*time.Second)
	for _, name := range []string{"film.webm", "photo.png", "big.log", "doc.pdf", "tone.wav"} {
		if strings.Contains(s.stderr.String(), "path=/"+name) {
			t.Errorf("%s fetched before its preview was asked for", name)
		}
	}

	// A text: its first MiB, by one range request, and a note.
	b.do(chromedp.Focus(chromedp.CSS(rowSel("big.log") + " td.name a")))
	b.key("p")
	b.previewed("big.log")
	b.waitJS("the text", `(p => p && p.textContent.startsWith("000000 the quick"))(document.querySelector("#preview-body pre"))`, 10*time.Second)
	if note := eval[string](b, `document.getElementById("preview-note").textContent`); note != "Showing the first 1 MiB of 2.5 MiB: download the file for all of it." {
		t.Errorf("note %q", note)
	}
	if n := eval[int](b, `document.querySelector("#preview-body pre").textContent.length`); n > 1<<20 || n < 1<<20-64 {
		t.Errorf("%d characters of text shown; want the first MiB", n)
	}
	if got := rangeStarts(s, "/big.log"); len(got) != 1 || got[0] != 0 {
		t.Errorf("range requests of big.log start at %v; want one at 0", got)
	}
	if got := eval[string](b, `document.getElementById("preview-count").textContent`); got != "1 of 8 · 2.5 MiB" {
		t.Errorf("count %q", got)
	}

	// A PDF, in the browser's own viewer (an extension of the browser,
	// with an origin of its own, where the PDF's bytes go).
	b.do(chromedp.Click(chromedp.ID("preview-next")))
	b.previewed("doc.pdf")
	b.waitJS("the PDF frame", `document.querySelector("#preview-body iframe")?.src.endsWith("/doc.pdf")`, 10*time.Second)
	if !pollTargets(b, "chrome-extension://", 10*time.Second) {
		t.Error("the PDF viewer did not load in the frame")
	}
	if h := get(t, s.URL+"doc.pdf").Header; h.Get("Content-Security-Policy") != "sandbox" || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Content-Type") != "application/pdf" {
		t.Errorf("doc.pdf served with %v", h)
	}

	// An SVG with a script: shown as its text.
	b.do(chromedp.Click(chromedp.ID("preview-next")))
	b.previewed("evil.svg")
	b.waitJS("the SVG's text", `document.querySelector("#preview-body pre")?.textContent.includes("<script>")`, 10*time.Second)

	// HTML named as a PDF: framed as a PDF, it runs nothing.
	b.do(chromedp.Click(chromedp.ID("preview-next")))
	b.previewed("fake.pdf")
	b.waitJS("the frame", `document.querySelector("#preview-body iframe")?.src.endsWith("/fake.pdf")`, 10*time.Second)
	if !pollTargets(b, "chrome-extension://", 10*time.Second) {
		t.Error("the PDF viewer did not take fake.pdf")
	}
	if eval[string](b, "document.title") == "pwned" {
		t.Error("a script of a previewed file ran in the page")
	}

	// A film, sought near its end at once, as someone looking at its end
	// would: the player reads its head and its index, then reads there by
	// a range request; most of it is never read.
	io0, err := proc.ReadIO(s.PID)
	if err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Click(chromedp.ID("preview-next")))
	b.previewed("film.webm")
	b.waitJS("the film's player", `document.querySelector("#preview-body video") !== null`, 10*time.Second)
	eval[float64](b, `document.querySelector("#preview-body video").currentTime = 955`)
	b.waitJS("the film sought", `(v => v.duration > 900 && v.currentTime > 950 && !v.seeking && v.readyState >= 2)(document.querySelector("#preview-body video"))`, 30*time.Second)
	io1, err := proc.ReadIO(s.PID)
	if err != nil {
		t.Fatal(err)
	}
	read := io1.RChar - io0.RChar
	t.Logf("the film is %d MB; the server read %.1f MB of it to show its end", filmSize>>20, float64(read)/(1<<20))
	if read > filmSize/4 {
		t.Errorf("the server read %d of the film's %d bytes to show its end", read, filmSize)
	}
	far := false
	for _, start := range rangeStarts(s, "/film.webm") {
		far = far || start > filmSize/2
	}
	if !far {
		t.Errorf("no range request past the film's middle; ranges from %v", rangeStarts(s, "/film.webm"))
	}

	// A small text, whole.
	b.do(chromedp.Click(chromedp.ID("preview-next")))
	b.previewed("hello.md")
	b.waitJS("the text", `document.querySelector("#preview-body pre")?.textContent.startsWith("# Hello")`, 10*time.Second)
	if note := eval[string](b, `document.getElementById("preview-note").textContent`); note != "" {
		t.Errorf("a whole text has the note %q", note)
	}

	// An image.
	b.do(chromedp.Click(chromedp.ID("preview-next")))
	b.previewed("photo.png")
	b.waitJS("the image", `(i => i && i.complete && i.naturalWidth === 320)(document.querySelector("#preview-body img"))`, 10*time.Second)
	b.screenshot("preview")
	b.checkAccessibility("the preview of an image")

	// A sound, the last file: no next.
	b.do(chromedp.Click(chromedp.ID("preview-next")))
	b.previewed("tone.wav")
	b.waitJS("the sound's length", `(a => a && a.readyState >= 1 && Math.abs(a.duration - 2) < 0.1)(document.querySelector("#preview-body audio"))`, 10*time.Second)
	if !eval[bool](b, `document.getElementById("preview-next").disabled`) {
		t.Error("the last file has a next")
	}

	// Back by the keyboard, then closed: the focus goes back to the row.
	b.do(chromedp.Focus(chromedp.ID("preview-close")))
	b.key(kb.ArrowLeft)
	b.previewed("photo.png")
	b.key(kb.Escape)
	b.waitJS("the panel closed", `!document.getElementById("preview").open && document.activeElement.textContent === "photo.png"`, 10*time.Second)
	if eval[int](b, `document.querySelectorAll("#preview-body *").length`) != 0 {
		t.Error("the closed panel still holds the preview")
	}
	b.checkPage()
}

// pollTargets waits until the browser has a target whose URL starts
// with prefix.
func pollTargets(b *browser, prefix string, timeout time.Duration) bool {
	return poll.Until(timeout, 50*time.Millisecond, func() bool {
		targets, err := chromedp.Targets(b.ctx)
		return err == nil && slices.ContainsFunc(targets, func(tg *cdptarget.Info) bool { return strings.HasPrefix(tg.URL, prefix) })
	})
}
