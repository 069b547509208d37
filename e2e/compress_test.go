//go:build e2e

package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/encode"
)

// writeLog writes an access log of about size bytes to path, seeded so
// that reruns match, and returns its sha256.
func writeLog(t testing.TB, path string, size int64) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	r := rand.New(rand.NewPCG(42, 7))
	methods := []string{"GET", "GET", "GET", "POST", "PUT"}
	paths := []string{"/", "/api/v2/items", "/api/v2/items/%d", "/static/js/app.%x.js", "/search?q=term%d", "/img/%d.png"}
	status := []int{200, 200, 200, 200, 201, 204, 301, 304, 404, 500}
	ts := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	var written int64
	for written < size {
		ts = ts.Add(time.Duration(r.IntN(50)) * time.Millisecond)
		p := paths[r.IntN(len(paths))]
		if strings.Contains(p, "%") {
			p = fmt.Sprintf(p, r.IntN(100000))
		}
		n, _ := fmt.Fprintf(w, "%s 192.168.%d.%d %s %s %d %d %.3fms trace=%08x\n",
			ts.Format(time.RFC3339Nano), r.IntN(8), r.IntN(256), methods[r.IntN(len(methods))], p,
			status[r.IntN(len(status))], r.IntN(1<<16), r.Float64()*100, r.Uint32())
		written += int64(n)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// decodedSHA decodes a body in coding c and returns the sha256 of the
// content and the number of encoded bytes read.
func decodedSHA(t testing.TB, body io.Reader, c string) (string, int64) {
	t.Helper()
	cr := &countingReader{r: body}
	dec, err := encode.NewReader(cr, encode.Coding(c))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	sha, _ := bodySHA(t, dec)
	return sha, cr.n
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// curlCompressed downloads url with curl --compressed and returns the
// sha256 of what curl wrote and the response's headers.
func curlCompressed(t *testing.T, url string, args ...string) (string, string) {
	t.Helper()
	curl := need(t, "curl")
	dir := t.TempDir()
	out, hdr := filepath.Join(dir, "body"), filepath.Join(dir, "headers")
	cmd := exec.Command(curl, append([]string{"-sSf", "--compressed", "-D", hdr, "-o", out}, append(args, url)...)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("curl: %v %s", err, b)
	}
	h, _ := os.ReadFile(hdr)
	return fileSHA(t, out), strings.ToLower(string(h))
}

func TestCompressClients(t *testing.T) {
	dir := t.TempDir()
	logSHA := writeLog(t, filepath.Join(dir, "app.log"), 8<<20)
	binSHA := writeRandom(t, filepath.Join(dir, "blob.bin"), 4<<20, 9)
	writeRandom(t, filepath.Join(dir, "noise.txt"), 1<<20, 10)
	s := startServer(t, dir, adminListen, "127.0.0.1:0")

	// A Go client asking for each coding in turn, decoding by itself.
	for _, c := range []string{"zstd", "br", "gzip"} {
		resp := get(t, s.URL+"app.log", "Accept-Encoding", c)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != c || resp.Header.Get("Vary") != "Accept-Encoding" || !strings.HasPrefix(resp.Header.Get("ETag"), "W/") {
			t.Fatalf("%s: %d %v", c, resp.StatusCode, resp.Header)
		}
		sha, n := decodedSHA(t, resp.Body, c)
		if sha != logSHA || n > 4<<20 {
			t.Errorf("dynamic %s: sha %s from %d encoded bytes", c, sha, n)
		}
	}
	// Incompressible: sent as it is, with sendfile's exact length.
	resp := get(t, s.URL+"blob.bin", "Accept-Encoding", "gzip, br, zstd")
	if sha, n := bodySHA(t, resp.Body); resp.Header.Get("Content-Encoding") != "" || sha != binSHA || resp.ContentLength != n {
		t.Errorf("blob.bin: %v", resp.Header)
	}
	// curl --compressed picks a coding and decodes it.
	sha, hdr := curlCompressed(t, s.URL+"app.log")
	if sha != logSHA || !strings.Contains(hdr, "content-encoding: ") {
		t.Errorf("curl --compressed: sha %s, headers %s", sha, hdr)
	}
	// Text by name that does not compress still decodes to itself.
	noiseSHA := fileSHA(t, filepath.Join(dir, "noise.txt"))
	if sha, _ := curlCompressed(t, s.URL+"noise.txt"); sha != noiseSHA {
		t.Errorf("noise.txt through curl --compressed: sha %s", sha)
	}
	if !waitFor(5*time.Second, func() bool { return strings.Contains(s.stderr.String(), "encoding=br") }) {
		t.Errorf("the access log does not name the coding:\n%s", tail(s.stderr.String(), 2000))
	}
	resp = s.metrics()
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), `largo_compressed_responses_total{coding="br",source="dynamic"} 1`) {
		t.Errorf("metrics lack the dynamic br response:\n%s", grepLines(string(b), "compressed"))
	}
	// A Range gets identity bytes, whatever the client accepts.
	resp = get(t, s.URL+"app.log", "Accept-Encoding", "gzip", "Range", "bytes=100-199")
	if b, _ := io.ReadAll(resp.Body); resp.StatusCode != 206 || resp.Header.Get("Content-Encoding") != "" || len(b) != 100 {
		t.Errorf("range: %d %v", resp.StatusCode, resp.Header)
	}
}

func TestPrecompressAndServe(t *testing.T) {
	dir := t.TempDir()
	logSHA := writeLog(t, filepath.Join(dir, "site", "app.log"), 1<<20)
	writeRandom(t, filepath.Join(dir, "site", "backup.tar.gz"), 64<<10, 11)
	code, out, stderr := runLargo(t, nil, "precompress", filepath.Join(dir, "site"), "--progress", "lines")
	if code != 0 || !strings.Contains(out, "1 compressed") || !strings.Contains(out, "3 sidecars written") || !strings.Contains(stderr, "wrote    app.log.br") {
		t.Fatalf("precompress: exit %d\n%s\n%s", code, out, stderr)
	}
	if code, out, _ := runLargo(t, nil, "precompress", filepath.Join(dir, "site")); code != 0 || !strings.Contains(out, "1 up to date") {
		t.Errorf("second precompress: exit %d\n%s", code, out)
	}
	if code, _, stderr := runLargo(t, nil, "precompress", filepath.Join(dir, "missing")); code != 2 || strings.Count(stderr, "\n") != 1 {
		t.Errorf("precompress of a missing folder: exit %d, %q", code, stderr)
	}
	// Dynamic compression off: only sidecars can be compressed.
	s := startServer(t, filepath.Join(dir, "site"), "--compress", "off")
	for _, c := range []string{"zstd", "br", "gzip"} {
		side, err := os.Stat(filepath.Join(dir, "site", "app.log"+encode.Coding(c).Ext()))
		if err != nil {
			t.Fatal(err)
		}
		resp := get(t, s.URL+"app.log", "Accept-Encoding", c)
		if resp.Header.Get("Content-Encoding") != c || resp.ContentLength != side.Size() || strings.HasPrefix(resp.Header.Get("ETag"), "W/") {
			t.Fatalf("sidecar %s: Content-Length %d (sidecar %d), %v", c, resp.ContentLength, side.Size(), resp.Header)
		}
		if sha, _ := decodedSHA(t, resp.Body, c); sha != logSHA {
			t.Errorf("sidecar %s decodes to sha %s", c, sha)
		}
		// Resuming the encoded representation: a range tied by If-Range.
		tag := resp.Header.Get("ETag")
		r := get(t, s.URL+"app.log", "Accept-Encoding", c, "Range", "bytes=10-", "If-Range", tag)
		if b, _ := io.ReadAll(r.Body); r.StatusCode != 206 || r.Header.Get("Content-Encoding") != c || int64(len(b)) != side.Size()-10 {
			t.Errorf("sidecar %s range: %d, %d bytes, %v", c, r.StatusCode, len(b), r.Header)
		}
		if r := get(t, s.URL+"app.log", "Accept-Encoding", c, "If-None-Match", tag); r.StatusCode != 304 {
			t.Errorf("sidecar %s If-None-Match: %d", c, r.StatusCode)
		}
	}
	if sha, hdr := curlCompressed(t, s.URL+"app.log"); sha != logSHA || !strings.Contains(hdr, "content-encoding") {
		t.Errorf("curl --compressed on sidecars: %s %s", sha, hdr)
	}
	resp := get(t, s.URL+"?format=json")
	b, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(b), "app.log.") || !strings.Contains(string(b), "backup.tar.gz") {
		t.Errorf("listing shows sidecars or hides a lone .gz:\n%s", b)
	}
	// Without sidecars and with compression off: identity.
	resp = get(t, s.URL+"backup.tar.gz", "Accept-Encoding", "gzip")
	if resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Content-Type") != "application/gzip" {
		t.Errorf("a .gz file: %v", resp.Header)
	}
}

func TestCompressFlags(t *testing.T) {
	code, out, _ := runLargo(t, nil, "serve", "--help-all")
	for _, want := range []string{"--compress ", `(default "on")`, "--compress-level", `(default "fast")`, "--compress-streams", "(default 32)", "LARGO_COMPRESS_LEVEL"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("serve --help-all lacks %q", want)
		}
	}
	code, out, _ = runLargo(t, nil, "precompress", "--help")
	for _, want := range []string{"--jobs", "--progress", "LARGO_JOBS"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("precompress --help lacks %q", want)
		}
	}
	for _, bad := range [][]string{{"--compress", "maybe"}, {"--compress-level", "ultra"}, {"--compress-streams", "0"}} {
		if code, _, stderr := runLargo(t, nil, append([]string{"serve", t.TempDir()}, bad...)...); code != 2 || strings.Count(stderr, "\n") != 1 {
			t.Errorf("serve %v: exit %d, %q", bad, code, stderr)
		}
	}
	dir := t.TempDir()
	writeLog(t, filepath.Join(dir, "a.log"), 100<<10)
	s := startLargo(t, []string{"serve", dir, "--listen", "127.0.0.1:0"}, []string{"LARGO_COMPRESS=off"})
	if resp := get(t, s.URL+"a.log", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("LARGO_COMPRESS=off: %v", resp.Header)
	}
	s = startLargo(t, []string{"serve", dir, "--listen", "127.0.0.1:0"}, []string{"LARGO_COMPRESS_LEVEL=best"})
	if resp := get(t, s.URL+"a.log", "Accept-Encoding", "gzip"); resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("LARGO_COMPRESS_LEVEL=best: %v", resp.Header)
	}
}

// TestCompressConcurrent runs as many concurrent dynamic compressions of a
// log as the server allows (zstd, brotli and gzip in turn): every one is
// compressed in the coding asked for, and one of each decodes to the log.
// (What they cost in memory is BenchmarkCompress's figure; encode's own
// tests bound the heap of its encoders.)
func TestCompressConcurrent(t *testing.T) {
	const clients = 20
	dir := t.TempDir()
	logSHA := writeLog(t, filepath.Join(dir, "big.log"), 16<<20)
	s := startServer(t, dir, "--compress-streams", strconv.Itoa(clients))
	compressConcurrently(t, s.URL+"big.log", clients, logSHA)
}

// compressConcurrently asks clients clients at once for url, a log whose
// sha256 is logSHA, each in one of zstd, brotli and gzip in turn: each
// answer must be in the coding asked for and not empty, and the first of
// each coding must decode to the log.
func compressConcurrently(t testing.TB, url string, clients int, logSHA string) {
	t.Helper()
	codings := []string{"zstd", "br", "gzip"}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Go(func() {
			c := codings[i%len(codings)]
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Accept-Encoding", c)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if resp.Header.Get("Content-Encoding") != c {
				errs <- fmt.Errorf("client %d: Content-Encoding %q; want %s", i, resp.Header.Get("Content-Encoding"), c)
				return
			}
			if i < len(codings) { // one of each decoded and checked
				dec, _ := encode.NewReader(resp.Body, encode.Coding(c))
				h := sha256.New()
				_, err := io.Copy(h, dec)
				dec.Close()
				if sha := hex.EncodeToString(h.Sum(nil)); err != nil || sha != logSHA {
					errs <- fmt.Errorf("client %d (%s): sha %s, %v", i, c, sha, err)
				}
				return
			}
			if n, err := io.Copy(io.Discard, resp.Body); err != nil || n == 0 {
				errs <- fmt.Errorf("client %d (%s): %d bytes, %v", i, c, n, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
