//go:build e2e

package e2e

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/internal/testenv"
)

const testToken = "e2e-secret-token"

// startWriter serves dir with writes on and the test token.
func startWriter(t testing.TB, dir string, args ...string) *server {
	t.Helper()
	return startServer(t, dir, append([]string{"--upload", "--token", testToken, adminListen, "127.0.0.1:0"}, args...)...)
}

// put sends a PUT of body (size -1: chunked) with headers as name, value
// pairs, and returns the response with its body read.
func put(t testing.TB, url string, body io.Reader, size int64, hdr ...string) (*http.Response, string) {
	t.Helper()
	return send(t, "PUT", url, body, size, hdr...)
}

func send(t testing.TB, method, url string, body io.Reader, size int64, hdr ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var bearer = []string{"Authorization", "Bearer " + testToken}

// noTemp fails the test if an upload left a temporary file.
func noTemp(t testing.TB, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tmp"))
	if len(ents) != 0 {
		t.Errorf("%d temporary files left in .largo/tmp", len(ents))
	}
}

// absent fails the test if name exists in dir.
func absent(t testing.TB, dir, name string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name))); !os.IsNotExist(err) {
		t.Errorf("%s exists (%v); want no file", name, err)
	}
}

func reprDigest(sha string) string {
	b, _ := hex.DecodeString(sha)
	return "sha-256=:" + base64.StdEncoding.EncodeToString(b) + ":"
}

// TestPut1GiB uploads a 1 GiB file with curl, streamed (-T) and as a
// --data-binary body, to a folder and to a bucket, and checks what is
// stored byte for byte.
func TestPut1GiB(t *testing.T) {
	curl := need(t, "curl")
	src := filepath.Join(t.TempDir(), "big.bin")
	want := writeRandom(t, src, 1<<30, 11)
	// curl holds a --data-binary body in memory and refuses one of 1 GiB
	// or more, so that upload sends the file less its last MiB.
	short := filepath.Join(t.TempDir(), "short.bin")
	wantShort := copyPrefix(t, src, short, 1<<30-1<<20)
	forEachTarget(t, func(t *testing.T, g *target) { put1GiB(t, g, curl, src, want, short, wantShort) })
}

// put1GiB uploads with curl to the target of g and checks each stored
// file. (What the uploads cost the server in memory, on a folder and on a
// bucket, announced and chunked, is BenchmarkUpload's figure.)
func put1GiB(t *testing.T, g *target, curl, src, want, short, wantShort string) {
	s := g.serve(t)
	type upload struct {
		name string
		args []string
		code string
		want string
	}
	uploads := []upload{
		{"streamed.bin", []string{"-T", src}, "201", want},
		{"streamed.bin", []string{"-T", src}, "204", want}, // a replacement
	}
	if g.srv == nil {
		uploads = append(uploads, upload{"binary.bin", []string{"-X", "PUT", "--data-binary", "@" + short, "-H", "Content-Type: application/octet-stream"}, "201", wantShort})
	} else {
		// On a bucket, what takes another way is a body of unknown
		// length: buffered parts of a multipart upload.
		uploads = append(uploads, upload{"chunked.bin", []string{"-T", src, "-H", "Transfer-Encoding: chunked"}, "201", want})
	}
	for _, tt := range uploads {
		args := append([]string{"-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer " + testToken}, tt.args...)
		start := time.Now()
		out, err := exec.Command(curl, append(args, s.URL+"sub/"+tt.name)...).CombinedOutput()
		if err != nil || string(out) != tt.code {
			t.Fatalf("curl %v: %v %s", tt.args[:2], err, out)
		}
		t.Logf("curl %s %s: %s in %s", tt.args[0], tt.name, tt.code, time.Since(start).Round(time.Millisecond))
		if got := fileSHA(t, filepath.Join(g.dir, "sub", tt.name)); got != tt.want {
			t.Fatalf("%s: stored sha %s; want %s", tt.name, got, tt.want)
		}
	}
	g.clean(t)
}

// copyPrefix copies the first n bytes of src to dst and returns their
// sha256.
func copyPrefix(t testing.TB, src, dst string, n int64) string {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, io.LimitReader(in, n)); err != nil {
		t.Fatal(err)
	}
	return fileSHA(t, dst)
}

func TestPutAnswers(t *testing.T) { forEachTarget(t, putAnswers) }

func putAnswers(t *testing.T, g *target) {
	g.seed(t, "old.txt", "old")
	s := g.serve(t)
	resp, _ := put(t, s.URL+"new.txt", strings.NewReader("hello"), 5, bearer...)
	sum := sha256.Sum256([]byte("hello"))
	if resp.StatusCode != 201 || resp.Header.Get("ETag") == "" || resp.Header.Get("Repr-Digest") != reprDigest(hex.EncodeToString(sum[:])) {
		t.Fatalf("new: %d %v", resp.StatusCode, resp.Header)
	}
	if got := get(t, s.URL+"new.txt").Header.Get("ETag"); got != resp.Header.Get("ETag") {
		t.Errorf("ETag after PUT %s, on GET %s", resp.Header.Get("ETag"), got)
	}
	etag := get(t, s.URL+"old.txt").Header.Get("ETag")
	resp, _ = put(t, s.URL+"old.txt", strings.NewReader("replaced"), -1, append([]string{"If-Match", etag, "Content-Digest", reprDigest(sha("replaced"))}, bearer...)...)
	if resp.StatusCode != 204 {
		t.Fatalf("If-Match replace: %d", resp.StatusCode)
	}
	// Basic auth with the token as password, as browsers and curl -u send it.
	resp, _ = put(t, s.URL+"basic.txt", strings.NewReader("b"), 1, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("user:"+testToken)))
	if resp.StatusCode != 201 {
		t.Fatalf("basic auth: %d", resp.StatusCode)
	}
	// DELETE: a file, an empty-only folder, recursive.
	put(t, s.URL+"d/e/f.txt", strings.NewReader("f"), 1, bearer...)
	for _, tt := range []struct {
		path string
		code int
	}{{"basic.txt", 204}, {"basic.txt", 404}, {"d", 409}, {"d?recursive=1", 204}} {
		if resp, body := send(t, "DELETE", s.URL+tt.path, nil, 0, bearer...); resp.StatusCode != tt.code {
			t.Errorf("DELETE %s: %d %s; want %d", tt.path, resp.StatusCode, body, tt.code)
		}
	}
	absent(t, g.dir, "d")
	if resp, _ := send(t, "DELETE", s.URL+"new.txt", nil, 0); resp.StatusCode != 401 {
		t.Errorf("DELETE without a token: %d", resp.StatusCode)
	}
	g.clean(t)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestBadWrites sends every kind of bad write, to a folder and to a
// bucket: each gets its status and leaves no file behind, nor a multipart
// upload.
func TestBadWrites(t *testing.T) {
	curl := need(t, "curl")
	forEachTarget(t, func(t *testing.T, g *target) { badWrites(t, g, curl) })
}

func badWrites(t *testing.T, g *target, curl string) {
	dir := g.dir
	g.seed(t, "exists.txt", "keep me")
	os.MkdirAll(filepath.Join(dir, ".hidden"), 0o755)
	s := g.serve(t, "--max-upload", "1MiB")
	big := strings.Repeat("x", 1<<20+1)
	tests := []struct {
		name   string
		path   string
		body   string
		size   int64
		hdr    []string
		code   int
		reason string
	}{
		{"no token", "new.bin", "data", 4, nil, 401, "unauthorized"},
		{"wrong token", "new.bin", "data", 4, []string{"Authorization", "Bearer wrong"}, 401, "unauthorized"},
		{"wrong basic password", "new.bin", "data", 4, []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("u:wrong"))}, 401, "unauthorized"},
		{"digest mismatch", "new.bin", "data", 4, append([]string{"Content-Digest", reprDigest(sha("other"))}, bearer...), 400, "digest mismatch: computed " + reprDigest(sha("data"))},
		{"repr-digest mismatch", "new.bin", "data", -1, append([]string{"Repr-Digest", reprDigest(sha("other"))}, bearer...), 400, "digest mismatch"},
		{"over the limit", "new.bin", big, int64(len(big)), bearer, 413, "too large"},
		{"over the limit, chunked", "new.bin", big, -1, bearer, 413, "too large"},
		{"if-none-match on an existing file", "exists.txt", "data", 4, append([]string{"If-None-Match", "*"}, bearer...), 412, "precondition failed"},
		{"into a dot-folder", ".hidden/new.bin", "data", 4, bearer, 403, "hidden or reserved"},
		{"a dotfile", ".env", "data", 4, bearer, 403, "hidden or reserved"},
		{"the state folder", ".largo/tmp/x", "data", 4, bearer, 403, "hidden or reserved"},
	}
	for _, tt := range tests {
		resp, body := put(t, s.URL+tt.path, strings.NewReader(tt.body), tt.size, tt.hdr...)
		if resp.StatusCode != tt.code || !strings.HasPrefix(body, tt.reason) {
			t.Errorf("%s: %d %q; want %d %q", tt.name, resp.StatusCode, body, tt.code, tt.reason)
		}
		if tt.code == 401 && len(resp.Header.Values("WWW-Authenticate")) == 0 {
			t.Errorf("%s: no WWW-Authenticate", tt.name)
		}
		if tt.name == "digest mismatch" && resp.Header.Get("Repr-Digest") != reprDigest(sha("data")) {
			t.Errorf("digest mismatch: Repr-Digest %q", resp.Header.Get("Repr-Digest"))
		}
	}
	// Paths that escape, sent as is by curl.
	for _, p := range []string{"/../escape.bin", "/a/../../escape.bin", "/%2e%2e/escape.bin"} {
		out, err := exec.Command(curl, "-sS", "--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", "-T", "-", "-H", "Expect:",
			"-H", "Authorization: Bearer "+testToken, "http://"+s.Addr+p).CombinedOutput()
		if err != nil || string(out) != "400" {
			t.Errorf("PUT %s: %v %s; want 400", p, err, out)
		}
	}
	absent(t, dir, "new.bin")
	absent(t, dir, ".env")
	absent(t, filepath.Dir(dir), "escape.bin")
	if b, _ := os.ReadFile(filepath.Join(dir, "exists.txt")); string(b) != "keep me" {
		t.Errorf("exists.txt is now %q", b)
	}
	g.clean(t)
}

// TestRefusedBodyNeverSent checks Expect: 100-continue: a write refused on
// its headers is answered at once, without 100 Continue, so the client
// never sends its body.
func TestRefusedBodyNeverSent(t *testing.T) {
	dir := t.TempDir()
	s := startWriter(t, dir, "--max-upload", "1GiB", "--reserve", "1PiB")
	for _, tt := range []struct {
		name, auth string
		size       int64
		code       string
	}{
		{"no token", "", 10 << 20, "401"},
		{"over the limit", "Bearer " + testToken, 2 << 30, "413"},
		{"over the free space", "Bearer " + testToken, 10 << 20, "507"},
	} {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "PUT /f.bin HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", s.Addr, tt.size)
		if tt.auth != "" {
			fmt.Fprintf(c, "Authorization: %s\r\n", tt.auth)
		}
		io.WriteString(c, "\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 "+tt.code) {
			t.Errorf("%s: first line %q, %v; want %s without 100 Continue", tt.name, line, err, tt.code)
		}
	}
	absent(t, dir, "f.bin")
}

// TestWritesOff checks that without --upload writes answer 405.
func TestWritesOff(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	for _, m := range []string{"PUT", "POST", "DELETE"} {
		resp, _ := send(t, m, s.URL+"f.bin", strings.NewReader("x"), 1, bearer...)
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Errorf("%s: %d Allow %q", m, resp.StatusCode, resp.Header.Get("Allow"))
		}
	}
	if resp, _ := send(t, "POST", s.URL+"_largo/uploads/", nil, 0, "Tus-Resumable", "1.0.0", "Upload-Length", "1"); resp.StatusCode != 404 {
		t.Errorf("tus endpoint with writes off: %d", resp.StatusCode)
	}
	absent(t, dir, "f.bin")
}

// TestGeneratedToken starts --upload without a token: one is printed once
// and works.
func TestGeneratedToken(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, "--upload")
	out := s.stdout.String()
	_, tok, ok := strings.Cut(out, "upload token (generated, shown once): ")
	tok, _, _ = strings.Cut(tok, "\n")
	if !ok || len(tok) < 32 {
		t.Fatalf("no generated token in %q", out)
	}
	if resp, _ := put(t, s.URL+"f", strings.NewReader("x"), 1, "Authorization", "Bearer "+tok); resp.StatusCode != 201 {
		t.Fatalf("PUT with the generated token: %d", resp.StatusCode)
	}
	if strings.Contains(s.stderr.String(), tok) {
		t.Error("the token is in the log")
	}
	open := startServer(t, t.TempDir(), "--upload-open")
	if !strings.Contains(open.stdout.String(), "WARNING") {
		t.Errorf("no warning for --upload-open: %q", open.stdout.String())
	}
	if resp, _ := put(t, open.URL+"f", strings.NewReader("x"), 1); resp.StatusCode != 201 {
		t.Fatalf("PUT to an open server: %d", resp.StatusCode)
	}
}

// partialPut sends the headers of a PUT of size bytes and sent bytes of its
// body, and returns the connection.
func partialPut(t *testing.T, addr, path string, size, sent int64) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", path, addr, testToken, size)
	if _, err := io.CopyN(c, zeros{}, sent); err != nil {
		t.Fatal(err)
	}
	return c
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestAbortedUpload kills a client mid-body, on a folder and on a bucket:
// no file at the target, no temporary file or multipart upload left,
// descriptors and store connections back to idle.
func TestAbortedUpload(t *testing.T) { forEachTarget(t, abortedUpload) }

func abortedUpload(t *testing.T, g *target) {
	g.seed(t, "target.bin", "old")
	s := g.serve(t)
	metric(t, s, "largo_upload_pending_bytes") // opens the connection the checks reuse
	idle := s.idleFDs()
	for _, target := range []string{"/new.bin", "/target.bin"} {
		c := partialPut(t, s.Addr, target, 200<<20, 50<<20)
		if !waitFor(5*time.Second, func() bool { return g.writing(t, s) }) {
			t.Fatal("no upload in progress")
		}
		c.(*net.TCPConn).SetLinger(0) // a reset, as a killed client sends
		c.Close()
		if !waitFor(5*time.Second, func() bool { return g.settled(t, s, idle) }) {
			t.Fatalf("%s: temporary file, descriptors or store connections left (%d fds, %d idle)", target, s.fds(), idle)
		}
	}
	absent(t, g.dir, "new.bin")
	if b, _ := os.ReadFile(filepath.Join(g.dir, "target.bin")); string(b) != "old" {
		t.Fatalf("target.bin is now %d bytes", len(b))
	}
	if !strings.Contains(s.stderr.String(), "outcome=aborted") {
		t.Error("no aborted outcome in the access log")
	}
	if !strings.Contains(s.metrics().Status, "200") {
		t.Error("server not answering after the aborts")
	}
	g.clean(t)
}

// writing reports whether an upload is on its way into the store: bytes
// pending, and on a folder its temporary file.
func (g *target) writing(t testing.TB, s *server) bool {
	if metric(t, s, "largo_upload_pending_bytes") == 0 {
		return false
	}
	if g.srv != nil {
		return true
	}
	ents, _ := os.ReadDir(filepath.Join(g.dir, ".largo", "tmp"))
	return len(ents) == 1
}

// settled reports whether the server is back to idle after uploads: no
// bytes pending, no temporary file, no store connection with anything in
// flight, and no more descriptors than idleFDs (besides the connections
// to the store kept in the pool).
func (g *target) settled(t testing.TB, s *server, idleFDs int) bool {
	if metric(t, s, "largo_upload_pending_bytes") != 0 {
		return false
	}
	if g.srv == nil {
		ents, _ := os.ReadDir(filepath.Join(g.dir, ".largo", "tmp"))
		return len(ents) == 0 && s.fds() <= idleFDs
	}
	busy, pooled := storeConns(t, s, g.srv)
	return busy == 0 && s.fds()-pooled <= idleFDs
}

// TestStalledUploader sends part of a body and stops: cut after the idle
// timeout, with nothing left behind.
func TestStalledUploader(t *testing.T) { forEachTarget(t, stalledUploader) }

func stalledUploader(t *testing.T, g *target) {
	s := g.serve(t, "--idle-timeout", "1s")
	c := partialPut(t, s.Addr, "/stall.bin", 100<<20, 1<<20)
	defer c.Close()
	if !waitFor(8*time.Second, func() bool { return strings.Contains(s.stderr.String(), "outcome=timeout") }) {
		t.Fatal("stalled uploader not cut")
	}
	absent(t, g.dir, "stall.bin")
	g.clean(t)
}

// TestConcurrentPuts sends different bodies to one path at once: the file
// is one whole upload.
func TestConcurrentPuts(t *testing.T) { forEachTarget(t, concurrentPuts) }

func concurrentPuts(t *testing.T, g *target) {
	s := g.serve(t)
	bodies := make([]string, 6)
	var wg sync.WaitGroup
	for i := range bodies {
		bodies[i] = strings.Repeat(fmt.Sprintf("<%d>", i), 1<<20)
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := put(t, s.URL+"same.txt", strings.NewReader(bodies[i]), -1, bearer...)
			if resp.StatusCode != 201 && resp.StatusCode != 204 {
				t.Errorf("PUT %d: %d %s", i, resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	got, _ := os.ReadFile(filepath.Join(g.dir, "same.txt"))
	whole := false
	for _, b := range bodies {
		whole = whole || string(got) == b
	}
	if !whole {
		t.Fatalf("same.txt (%d bytes) is not one whole upload", len(got))
	}
	g.clean(t)
}

// TestDiskFull serves a small tmpfs: uploads that together outgrow it get
// 507, leave nothing half-written, and the server goes on serving.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	testenv.Tmpfs(t, dir, "48m", "to test a full disk")
	os.WriteFile(filepath.Join(dir, "keep.bin"), []byte("old content"), 0o644)
	s := startWriter(t, dir)

	// Announced and too big: refused before the body.
	if code := refusedStatus(t, s, "PUT", s.URL+"big.bin", io.LimitReader(zeros{}, 64<<20), 64<<20, bearer...); code != 507 {
		t.Errorf("64 MiB into 48 MiB: %d", code)
	}
	// Each fits alone, together they do not: the disk fills mid-body.
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for i, name := range []string{"a.bin", "b.bin", "keep.bin"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = refusedStatus(t, s, "PUT", s.URL+name, io.LimitReader(zeros{}, 30<<20), 30<<20, bearer...)
		}()
	}
	wg.Wait()
	full := 0
	for i, name := range []string{"a.bin", "b.bin", "keep.bin"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		switch codes[i] {
		case 507:
			full++
			if name == "keep.bin" {
				if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != "old content" {
					t.Errorf("keep.bin changed by a failed upload")
				}
			} else if err == nil {
				t.Errorf("%s exists after a 507", name)
			}
		case 201, 204:
			if err != nil || fi.Size() != 30<<20 {
				t.Errorf("%s: %d but %v", name, codes[i], err)
			}
		default:
			t.Errorf("%s: %d", name, codes[i])
		}
	}
	if full == 0 {
		t.Fatalf("no upload met the full disk: %v", codes)
	}
	noTemp(t, dir)
	// Space freed by the failed uploads: a small one goes through.
	os.Remove(filepath.Join(dir, "a.bin"))
	os.Remove(filepath.Join(dir, "b.bin"))
	if resp, body := put(t, s.URL+"small.bin", strings.NewReader("small"), 5, bearer...); resp.StatusCode != 201 {
		t.Fatalf("after the full disk: %d %s", resp.StatusCode, body)
	}
}

// TestKill9MidUpload kills the server during an upload: after a restart
// the target is the old file and the temporary file is swept.
func TestKill9MidUpload(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "target.bin"), []byte("the old version"), 0o644)
	s := startWriter(t, dir)
	c := partialPut(t, s.Addr, "/target.bin", 100<<20, 40<<20)
	defer c.Close()
	c2 := partialPut(t, s.Addr, "/fresh.bin", 100<<20, 10<<20)
	defer c2.Close()
	if !waitFor(5*time.Second, func() bool {
		ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tmp"))
		return len(ents) == 2
	}) {
		t.Fatal("no temporary files while the uploads run")
	}
	s.cmd.Process.Kill()
	s.wait(5 * time.Second)
	if b, _ := os.ReadFile(filepath.Join(dir, "target.bin")); string(b) != "the old version" {
		t.Fatalf("after kill -9 target.bin is %d bytes", len(b))
	}
	absent(t, dir, "fresh.bin")

	s2 := startWriter(t, dir)
	noTemp(t, dir)
	if !waitFor(5*time.Second, func() bool { return strings.Contains(s2.stderr.String(), "removed temporary files") }) {
		t.Errorf("no sweep in the log:\n%s", s2.stderr.String())
	}
	if resp, _ := put(t, s2.URL+"target.bin", strings.NewReader("new"), 3, bearer...); resp.StatusCode != 204 {
		t.Fatalf("PUT after restart: %d", resp.StatusCode)
	}
}
