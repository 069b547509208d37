//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"largo"
	"largo/internal/poll"
)

// One file's upload over several connections, end to end, on a folder and
// on a bucket: tus-js-client's parallelUploads, `largo put -j 4` (its
// client killed, then its server), and the page, which sends a file of
// 256 MiB or more (PARALLEL_MIN in ui/assets/tus.js) as pieces.

// parallelSize is the size of the file every test here sends: the
// smallest the page sends in pieces, 16 of 16 MiB.
const parallelSize = 256 << 20

// pagePieces is how many pieces the page and largo put cut it into.
const pagePieces = 16

// uploadPOSTs counts the tus creations (partials and finals alike) in a
// server's access log.
func uploadPOSTs(s *server) int {
	return strings.Count(s.stderr.String(), "method=POST path=/_largo/uploads/ status=201 ")
}

// concatRecords counts the records of final uploads (each joined
// partials) in the target's state area: a file each on a folder, an
// object each on a bucket.
func concatRecords(t testing.TB, g *target) int {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(g.dir, largo.StateDir, "tus-concat"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(ents)
}

// checkStored fails the test unless the file stored at name is the one
// whose sha256 is want, as sha256sum reads it where the target keeps it
// and as the server's HEAD answers it (Repr-Digest).
func checkStored(t testing.TB, s *server, g *target, name, want string) {
	t.Helper()
	if got := sha256sum(t, filepath.Join(g.dir, filepath.FromSlash(name))); got != want {
		t.Errorf("%s: stored sha256 %s; want %s", name, got, want)
	}
	if got := headDigest(t, s.URL+name); got != reprDigestOf(t, want) {
		t.Errorf("%s: HEAD answers Repr-Digest %q; want %q", name, got, reprDigestOf(t, want))
	}
}

// TestParallelTusJS uploads 256 MiB with tus-js-client's parallelUploads
// (four partial uploads at once, then a final one), under Node: with the
// concat metadata that places each partial (concat-id, concat-offset,
// concat-length, added through the client's onBeforeRequest hook), its
// first client stopped half-way and killed, a second one resuming the
// partials from their URLs (parallelUploadUrls); and without the metadata
// (plain partials, which the final joins in the order it lists them). The
// server receives the file once, the file stored is the one sent, HEAD's
// Repr-Digest is its sha256, and the final request's time is logged.
func TestParallelTusJS(t *testing.T) {
	src := filepath.Join(t.TempDir(), "film.bin")
	want := writeRandom(t, src, parallelSize, 61)
	forEachTarget(t, func(t *testing.T, g *target) {
		s := g.serve(t)
		for i, mode := range []struct {
			name   string
			placed bool
		}{{"placed", true}, {"plain", false}} {
			name := "tus-js/" + mode.name + ".bin"
			args := []string{"--endpoint", s.URL + "_largo/uploads/", "--file", src, "--name", name, "--token", testToken, "--parallel", "4"}
			if mode.placed {
				args = append(args, "--place", "film-"+g.kind+"-0123456789")
			}
			posts, before := uploadPOSTs(s), received(t, s)
			var resumed string
			if mode.placed {
				parts, sent := stoppedParallelClient(t, append(args, "--stop-at", strconv.Itoa(parallelSize/2)))
				held, _ := poll.Steady(10*time.Second, 200*time.Millisecond, 3, func() int64 { return received(t, s) - before })
				resumed = fmt.Sprintf(", resumed by a second client once the first had sent %d MiB (the server held %d MiB)", sent>>20, held>>20)
				args = append(args, "--parts", strings.Join(parts, ","))
			}
			start := time.Now()
			out, err := nodeScript(t, "tus-parallel.mjs", args...).CombinedOutput()
			took := time.Since(start)
			m := regexp.MustCompile(`(?m)^final (\d+) (\d+)$`).FindStringSubmatch(string(out))
			if err != nil || m == nil || m[2] != "201" || !strings.Contains(string(out), "\ndone ") {
				t.Fatalf("%s: tus-js-client: %v\n%s", mode.name, err, tail(string(out), 2000))
			}
			t.Logf("%s, %s partials: %d MiB sent by tus-js-client, 4 partials at once%s; the last client took %s, its final request %s ms",
				g.kind, mode.name, parallelSize>>20, resumed, took.Round(10*time.Millisecond), m[1])
			if n := uploadPOSTs(s) - posts; n != 5 {
				t.Errorf("%s: %d uploads created; want 4 partials and 1 final", mode.name, n)
			}
			if n := received(t, s) - before; n > parallelSize+tusJSSlack {
				t.Errorf("%s: the server received %d bytes for a file of %d", mode.name, n, parallelSize)
			}
			if n := concatRecords(t, g); n != i+1 {
				t.Errorf("%s: %d records of joined uploads in the state area; want %d", mode.name, n, i+1)
			}
			checkStored(t, s, g, name, want)
		}
		g.clean(t)
	})
}

// tusJSSlack is what the server may receive twice of a file whose
// tus-js-client was stopped: the bytes of a partial's request received
// after its offset was last recorded (none, when the server lives on).
const tusJSSlack = 1 << 20

// received is the body bytes the server received so far.
func received(t testing.TB, s *server) int64 {
	t.Helper()
	return int64(metric(t, s, "largo_bytes_received_total"))
}

// stoppedParallelClient runs tus-parallel.mjs with args, which include
// --stop-at, until the client stops, kills it, and returns the URLs of its
// partial uploads and the bytes it had sent.
func stoppedParallelClient(t *testing.T, args []string) ([]string, int64) {
	t.Helper()
	client := nodeScript(t, "tus-parallel.mjs", args...)
	out, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	client.Stderr = os.Stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { client.Process.Kill(); client.Wait() }()
	var parts []string
	var sent int64
	sc := bufio.NewScanner(out)
	for sent == 0 && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "parts "):
			parts = strings.Fields(strings.TrimPrefix(line, "parts "))
		case strings.HasPrefix(line, "stopped "):
			sent, _ = strconv.ParseInt(strings.TrimPrefix(line, "stopped "), 10, 64)
		case strings.HasPrefix(line, "error "), strings.HasPrefix(line, "done "):
			t.Fatalf("first client: %s", line)
		}
	}
	if len(parts) != 4 || sent == 0 {
		t.Fatalf("first client: partials %q, stopped after %d bytes", parts, sent)
	}
	return parts, sent
}

// putSummary reads the bytes moved from `largo put`'s summary line, and
// whether it says it resumed.
func putSummary(t *testing.T, stderr string) (moved int64, resumed bool) {
	t.Helper()
	m := regexp.MustCompile(`uploaded .*, ([0-9.]+ [KMG]?i?B) moved in [^,]+(, resumed)?`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no summary in %q", stderr)
	}
	moved, err := largo.ParseSize(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return moved, m[2] != ""
}

// joinedIn reads how long the server took to join the pieces, from
// `largo put`'s summary line.
func joinedIn(stderr string) string {
	m := regexp.MustCompile(`joined by the server in ([^,\s]+)`).FindStringSubmatch(stderr)
	if m == nil {
		return "?"
	}
	return m[1]
}

// TestParallelPut sends 256 MiB with `largo put -j 4` (16 pieces, four at
// once) to largo, twice cut short: once its client killed (SIGKILL)
// half-way and run again, once its server killed (SIGKILL) half-way and
// started again on the same folder or bucket and address, and the client
// run again. Each re-run says it resumed and sends no more than what the
// server did not hold (what each server received says so too), and the
// file stored is the one sent.
func TestParallelPut(t *testing.T) {
	src := filepath.Join(t.TempDir(), "disk.img")
	want := writeRandom(t, src, parallelSize, 62)
	forEachTarget(t, func(t *testing.T, g *target) {
		s := g.serve(t)
		env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "LARGO_TOKEN=" + testToken}
		// In flight at a cut: at most a piece on each connection, which
		// the server may not have kept.
		const slack = 4 * (parallelSize / pagePieces)

		t.Run("client killed", func(t *testing.T) {
			url := s.URL + "client-killed/"
			c := startClientEnv(t, env, "put", src, url, "-q", "-j", "4")
			// The client reads the file twice at once: to hash it, and to
			// send it.
			if code := c.stopAfter(t, parallelSize+parallelSize/2, syscall.SIGKILL); code != -1 {
				t.Fatalf("killed client exit %d", code)
			}
			absent(t, g.dir, "client-killed/disk.img")
			held, _ := poll.Steady(10*time.Second, 100*time.Millisecond, 3, func() int64 { return received(t, s) })
			if held == 0 || held >= parallelSize {
				t.Fatalf("the server received %d bytes before the kill; want some of %d", held, parallelSize)
			}
			c = startClientEnv(t, env, "put", src, url, "-j", "4")
			if code := c.wait(t, 120*time.Second); code != 0 {
				t.Fatalf("re-run: exit %d: %s", code, c.stderr.String())
			}
			moved, resumed := putSummary(t, c.stderr.String())
			again := received(t, s) - held
			t.Logf("%s: %d MiB held at the kill; the re-run sent %d MiB (the server received %d MiB), and the server joined the pieces in %s",
				g.kind, held>>20, moved>>20, again>>20, joinedIn(c.stderr.String()))
			if !resumed || moved > parallelSize-held+slack || again > parallelSize-held+slack {
				t.Errorf("re-run: resumed %v, sent %d and the server received %d bytes more; the server held %d of %d before: %s",
					resumed, moved, again, held, parallelSize, c.stderr.String())
			}
			checkStored(t, s, g, "client-killed/disk.img", want)
		})

		t.Run("server killed", func(t *testing.T) {
			url := s.URL + "server-killed/"
			base := received(t, s)
			// No retry: the client stops when its server dies, keeping its
			// state (exit 3).
			c := startClientEnv(t, env, "put", src, url, "-q", "-j", "4", "--retries", "0")
			if !waitForFast(60*time.Second, c.done, func() bool { return received(t, s)-base >= parallelSize/2 }) {
				t.Fatalf("the server received %d bytes; want half the file before the kill: %s", received(t, s)-base, c.stderr.String())
			}
			s.cmd.Process.Kill()
			s.wait(10 * time.Second)
			if code := c.wait(t, 60*time.Second); code != 3 {
				t.Fatalf("client of a killed server: exit %d; want 3: %s", code, c.stderr.String())
			}
			absent(t, g.dir, "server-killed/disk.img")
			s2 := g.serve(t, "--listen", s.Addr)
			c = startClientEnv(t, env, "put", src, url, "-j", "4")
			if code := c.wait(t, 120*time.Second); code != 0 {
				t.Fatalf("re-run: exit %d: %s", code, c.stderr.String())
			}
			moved, resumed := putSummary(t, c.stderr.String())
			again := received(t, s2)
			t.Logf("%s: the server killed after receiving at least %d MiB; the re-run sent %d MiB to its successor (which received %d MiB), which joined the pieces in %s",
				g.kind, parallelSize/2>>20, moved>>20, again>>20, joinedIn(c.stderr.String()))
			if !resumed || moved > parallelSize/2+slack || again > parallelSize/2+slack {
				t.Errorf("re-run: resumed %v, sent %d bytes, the new server received %d; the killed one had received half of %d: %s",
					resumed, moved, again, parallelSize, c.stderr.String())
			}
			checkStored(t, s2, g, "server-killed/disk.img", want)
			if n := uploadPOSTs(s2); n > pagePieces/2+4+1 {
				t.Errorf("the new server created %d uploads; want only the pieces not begun before the kill, and the final", n)
			}
			g.clean(t)
		})
	})
}

// lastCreation is how long the server took to answer the last tus
// creation in its access log: a final upload's, when it ends a parallel
// one.
func lastCreation(s *server) string {
	all := regexp.MustCompile(`method=POST path=/_largo/uploads/ status=201 bytes=\d+ duration=(\S+)`).FindAllStringSubmatch(s.stderr.String(), -1)
	if len(all) == 0 {
		return "?"
	}
	return all[len(all)-1][1]
}

// pageRecord is what the page keeps in localStorage of a parallel
// upload (ui/assets/tus.js, ParallelUpload).
type pageRecord struct {
	ConcatID  string   `json:"concatId"`
	PieceSize int64    `json:"pieceSize"`
	Pieces    []string `json:"pieces"`
	Done      []bool   `json:"done"`
}

// pageRecords returns the parallel uploads the page keeps.
func pageRecords(b *browser) []pageRecord {
	b.t.Helper()
	raw := eval[string](b, `JSON.stringify(Object.keys(localStorage).filter(k => k.startsWith("largo.upload ")).map(k => JSON.parse(localStorage.getItem(k))))`)
	var recs []pageRecord
	if err := json.Unmarshal([]byte(raw), &recs); err != nil {
		b.t.Fatalf("the page's records %s: %v", raw, err)
	}
	return recs
}

// onePageRecord returns the one parallel upload the page keeps, with the
// URLs of its pieces begun and not complete, and how many are complete.
func onePageRecord(b *browser) (rec pageRecord, begun []string, done int) {
	b.t.Helper()
	recs := pageRecords(b)
	if len(recs) != 1 || len(recs[0].Pieces) != pagePieces || len(recs[0].Done) != pagePieces || recs[0].ConcatID == "" {
		b.t.Fatalf("the page keeps %+v; want one record of %d pieces", recs, pagePieces)
	}
	for i, u := range recs[0].Pieces {
		switch {
		case recs[0].Done[i]:
			done++
		case u != "":
			begun = append(begun, u)
		}
	}
	return recs[0], begun, done
}

// TestParallelPage uploads a 256 MiB file through the page, which sends
// it as 16 pieces, four at once, then a final upload. A reload half-way
// leaves the page's record of the pieces in localStorage, and the page
// lists the upload as interrupted: discarded, each piece begun is ended
// on the server; the same file chosen again after another reload resumes
// each piece begun (HEAD for its offset) and keeps those complete. The
// server creates 16 uploads and one final (its access log and the record
// of the join in its state area say so), no piece twice, receives the
// file once, and stores the file chosen.
func TestParallelPage(t *testing.T) {
	src := filepath.Join(t.TempDir(), "big.bin")
	want := writeRandom(t, src, parallelSize, 63)
	b := newBrowser(t)
	forEachTarget(t, func(t *testing.T, g *target) {
		b := b.with(t)
		s := g.serve(t)
		b.throttleUploads(48 << 20)
		b.openToUpload(s.URL, "anyone", testToken, "anyone")
		row := rowJS("big.bin")
		progress := func(what string, share float64) {
			t.Helper()
			b.waitJS(what, `(`+row+`)?.querySelector("progress").value > `+ftoa(share), 60*time.Second)
		}
		reload := func() {
			t.Helper()
			b.do(chromedp.Reload())
			b.waitJS("the unfinished upload", `(`+row+`)?.dataset.state === "interrupted"`, 15*time.Second)
		}

		// Discarded after a reload: the pieces begun end on the server.
		b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
		progress("a tenth of the file", 0.1)
		reload()
		_, begun, _ := onePageRecord(b)
		b.press("big.bin", ".up-cancel")
		b.waitJS("the discarded upload", `(`+row+`)?.dataset.state === "cancelled"`, 10*time.Second)
		if !waitFor(10*time.Second, func() bool { return len(pageRecords(b)) == 0 }) {
			t.Fatalf("the page still keeps %+v after a discard", pageRecords(b))
		}
		for _, u := range begun {
			if off := tusOffset(t, u); off != -1 {
				t.Errorf("piece %s holds %d bytes after a discard; want it gone", u, off)
			}
		}
		if len(begun) == 0 {
			t.Error("no piece begun and not complete to discard")
		}
		created, before := uploadPOSTs(s), received(t, s)

		// Resumed after a reload: the pieces complete stay, those begun go
		// on from the server's offsets.
		b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
		progress("a third of the file", 0.35)
		reload()
		rec, begun, done := onePageRecord(b)
		if done == 0 || len(begun) == 0 {
			t.Fatalf("at the reload %d pieces complete and %q begun; want some of each", done, begun)
		}
		// The server's offsets settle where the cut requests left them.
		held, _ := poll.Steady(10*time.Second, 200*time.Millisecond, 3, func() int64 { return received(t, s) - before })
		heads := func() int {
			return len(regexp.MustCompile(`method=HEAD path=/_largo/uploads/[\w+-]+ status=200`).FindAllString(s.stderr.String(), -1))
		}
		asked := heads()
		b.do(chromedp.SetUploadFiles(chromedp.ID("pick-files"), []string{src}))
		b.waitJS("the resumed upload", `(`+row+`)?.querySelector(".up-state").textContent.includes("resumed at")`, 15*time.Second)
		b.waitJS("the end of the upload", `(`+row+`)?.dataset.state === "done"`, 120*time.Second)
		b.waitJS("the refreshed listing", `document.querySelector('#files tr[data-name="big.bin"]') !== null`, 10*time.Second)
		total := received(t, s) - before
		t.Logf("%s: at the reload %d of %d pieces complete, %d begun, %d MiB received; %d MiB received in all; the final request took %s",
			g.kind, done, pagePieces, len(begun), held>>20, total>>20, lastCreation(s))

		checkStored(t, s, g, "big.bin", want)
		if n := uploadPOSTs(s) - created; n != pagePieces+1 {
			t.Errorf("%d uploads created; want %d pieces and one final", n, pagePieces)
		}
		if n := concatRecords(t, g); n != 1 {
			t.Errorf("%d records of joined uploads in the state area; want 1", n)
		}
		if n := heads() - asked; n < len(begun) {
			t.Errorf("%d pieces asked for their offsets after the reload; %d were begun and not complete", n, len(begun))
		}
		if total > parallelSize+parallelSize/pagePieces {
			t.Errorf("the server received %d bytes for a file of %d: pieces sent again", total, parallelSize)
		}
		if n := len(pageRecords(b)); n != 0 {
			t.Errorf("%d uploads left in the browser's storage (concat-id %s before)", n, rec.ConcatID)
		}
		if sum := eval[string](b, `document.getElementById("upload-summary").textContent`); !strings.Contains(sum, "1 file uploaded, 256 MiB") {
			t.Errorf("summary %q", sum)
		}
		b.checkPage()
		g.clean(t)
	})
}
