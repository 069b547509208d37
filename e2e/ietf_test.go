//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"largo/s3/s3test"
)

// The IETF resumable-upload protocol (draft-ietf-httpbis-resumable-upload)
// at a file's own URL, against the real binary.

// ietfHeaders are the fields of a request in interop version 9.
func ietfHeaders(hdr ...string) []string {
	return append(append([]string{"Upload-Draft-Interop-Version", "9"}, bearer...), hdr...)
}

// appendHeaders are those of an append at offset.
func appendHeaders(offset int64, complete bool, hdr ...string) []string {
	c := "?0"
	if complete {
		c = "?1"
	}
	return ietfHeaders(append([]string{"Content-Type", "application/partial-upload",
		"Upload-Offset", strconv.FormatInt(offset, 10), "Upload-Complete", c}, hdr...)...)
}

// rawRequest sends a request's head on a new connection, with fields
// hdr, and returns the connection and a reader of what comes back.
func rawRequest(t *testing.T, addr, method, path string, size int64, hdr ...string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", method, path, addr, size)
	for i := 0; i+1 < len(hdr); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", hdr[i], hdr[i+1])
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	return c, bufio.NewReader(c)
}

// response reads the next response, interim or final, off a raw
// connection.
func response(t *testing.T, r *bufio.Reader) *http.Response {
	t.Helper()
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	if resp.StatusCode >= 200 {
		resp.Body.Close()
	}
	return resp
}

// uploadState asks an upload resource where it stands: the status, and
// the offset and completeness it reports.
func uploadState(t *testing.T, url string) (code int, offset int64, complete string) {
	t.Helper()
	resp, _ := send(t, "HEAD", url, nil, 0, ietfHeaders()...)
	offset = -1
	if v := resp.Header.Get("Upload-Offset"); v != "" {
		offset, _ = strconv.ParseInt(v, 10, 64)
	}
	return resp.StatusCode, offset, resp.Header.Get("Upload-Complete")
}

// TestIETF runs the protocol against a folder and a bucket: the 104 on
// the wire, a client cut mid-body that resumes, the refusals with their
// problem documents, cancellation, and a version the server does not
// speak.
func TestIETF(t *testing.T) { forEachTarget(t, ietfProtocol) }

func ietfProtocol(t *testing.T, g *target) {
	const size, sent = 24 << 20, 12 << 20
	src := filepath.Join(t.TempDir(), "video.bin")
	want := writeRandom(t, src, size, 41)
	s := g.serve(t)

	// A PUT of the whole file, cut after half of it as a killed client
	// would be: the 104 came first, on the wire, with the upload's URL.
	c, r := rawRequest(t, s.Addr, "PUT", "/clips/video.bin", size, ietfHeaders("Upload-Complete", "?1")...)
	interim := response(t, r)
	loc := interim.Header.Get("Location")
	if interim.StatusCode != 104 || !strings.HasPrefix(loc, "/_largo/uploads/ietf/") ||
		interim.Header.Get("Upload-Draft-Interop-Version") != "9" || !strings.Contains(interim.Header.Get("Upload-Limit"), "max-age=") {
		t.Fatalf("first response: %d %v", interim.StatusCode, interim.Header)
	}
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(c, f, sent); err != nil {
		t.Fatal(err)
	}
	c.Close()
	upload := s.URL + strings.TrimPrefix(loc, "/")
	code, offset, complete := uploadState(t, upload)
	if code != 204 || complete != "?0" || offset <= 0 || offset > sent {
		t.Fatalf("HEAD after the cut: %d, offset %d, complete %q", code, offset, complete)
	}
	absent(t, g.dir, "clips/video.bin")
	if p := metric(t, s, "largo_upload_pending_bytes"); p != float64(offset) {
		t.Errorf("pending bytes %v; want %d", p, offset)
	}

	// An append at the wrong offset, and lengths that disagree.
	resp, body := send(t, "PATCH", upload, strings.NewReader("x"), 1, appendHeaders(offset+1, false)...)
	var p map[string]any
	json.Unmarshal([]byte(body), &p)
	if resp.StatusCode != 409 || resp.Header.Get("Upload-Offset") != strconv.FormatInt(offset, 10) || resp.Header.Get("Upload-Complete") != "?0" ||
		resp.Header.Get("Content-Type") != "application/problem+json" || p["type"] != "https://iana.org/assignments/http-problem-types#mismatching-upload-offset" ||
		p["expected-offset"] != float64(offset) {
		t.Errorf("wrong offset: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = send(t, "PATCH", upload, strings.NewReader("x"), 1, appendHeaders(offset, true, "Upload-Length", strconv.Itoa(size))...)
	if resp.StatusCode != 400 || !strings.Contains(body, "#inconsistent-upload-length") {
		t.Errorf("a last append short of the length: %d %s", resp.StatusCode, body)
	}
	if _, got, _ := uploadState(t, upload); got != offset {
		t.Fatalf("a refused append moved the offset to %d", got)
	}

	// The rest, from the offset the server gave.
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	resp, body = send(t, "PATCH", upload, f, size-offset, appendHeaders(offset, true)...)
	if resp.StatusCode != 201 || resp.Header.Get("Upload-Complete") != "?1" || resp.Header.Get("Repr-Digest") != reprDigest(want) ||
		resp.Header.Get("Location") != "/clips/video.bin" || resp.Header.Get("ETag") == "" {
		t.Fatalf("last append: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if got := fileSHA(t, filepath.Join(g.dir, "clips", "video.bin")); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	code, offset, complete = uploadState(t, upload)
	if g.srv == nil && (code != 204 || offset != size || complete != "?1") {
		t.Errorf("HEAD on the finished upload: %d, offset %d, complete %q", code, offset, complete)
	}
	if p := metric(t, s, "largo_upload_pending_bytes"); p != 0 {
		t.Errorf("pending bytes %v after the upload", p)
	}

	// An upload in parts, cancelled: its space is freed.
	resp, _ = put(t, s.URL+"cancelled.bin", strings.NewReader("first part"), 10, ietfHeaders("Upload-Complete", "?0")...)
	if resp.StatusCode != 201 || resp.Header.Get("Upload-Offset") != "10" {
		t.Fatalf("creation in parts: %d %v", resp.StatusCode, resp.Header)
	}
	cancelled := s.URL + strings.TrimPrefix(resp.Header.Get("Location"), "/")
	if r, _ := send(t, "DELETE", cancelled, nil, 0, ietfHeaders()...); r.StatusCode != 204 {
		t.Errorf("DELETE: %d", r.StatusCode)
	}
	if code, _, _ := uploadState(t, cancelled); code != 404 {
		t.Errorf("HEAD after DELETE: %d", code)
	}
	absent(t, g.dir, "cancelled.bin")
	if p := metric(t, s, "largo_upload_pending_bytes"); p != 0 {
		t.Errorf("pending bytes %v after the cancellation", p)
	}

	// Interop version 2 is not spoken: no 104; the whole file is a plain
	// PUT, a part is refused and nothing is stored.
	c, r = rawRequest(t, s.Addr, "PUT", "/old-client.bin", 5, append(bearer, "Upload-Draft-Interop-Version", "2", "Upload-Complete", "?0")...)
	io.WriteString(c, "hello")
	if resp := response(t, r); resp.StatusCode != 400 {
		t.Errorf("a part in version 2: %d %v", resp.StatusCode, resp.Header)
	}
	absent(t, g.dir, "old-client.bin")
	c, r = rawRequest(t, s.Addr, "PUT", "/old-client.bin", 5, append(bearer, "Upload-Draft-Interop-Version", "2", "Upload-Complete", "?1")...)
	io.WriteString(c, "hello")
	if resp := response(t, r); resp.StatusCode != 201 || resp.Header.Get("Upload-Complete") != "" {
		t.Errorf("the whole file in version 2: %d %v", resp.StatusCode, resp.Header)
	}
	if b, err := os.ReadFile(filepath.Join(g.dir, "old-client.bin")); string(b) != "hello" {
		t.Errorf("old-client.bin: %q %v", b, err)
	}
	g.clean(t)
	if g.srv != nil {
		if keys := stateKeys(t, g.srv); len(keys) != 0 {
			t.Errorf("state left in the bucket: %v", keys)
		}
	} else if ents, _ := os.ReadDir(filepath.Join(g.dir, ".largo", "tus")); len(ents) != 0 {
		t.Errorf("%d staged files left", len(ents))
	}
}

// TestIETFLimits: the size limit at creation, before any 104, and the
// expiry of an upload left alone.
func TestIETFLimits(t *testing.T) { forEachTarget(t, ietfLimits) }

func ietfLimits(t *testing.T, g *target) {
	s := g.serve(t, "--max-upload", "1MiB", "--upload-expiry", "2s")
	resp, _ := send(t, "OPTIONS", s.URL, nil, 0)
	if l := resp.Header.Get("Upload-Limit"); l != "max-size=1048576, max-age=2" {
		t.Errorf("OPTIONS: Upload-Limit %q", l)
	}
	c, r := rawRequest(t, s.Addr, "PUT", "/big.bin", 10, ietfHeaders("Upload-Complete", "?0", "Upload-Length", strconv.Itoa(2<<20))...)
	io.WriteString(c, "0123456789")
	resp = response(t, r)
	if resp.StatusCode != 413 || resp.Header.Get("Upload-Limit") != "max-size=1048576, max-age=2" {
		t.Errorf("over the limit: %d %v", resp.StatusCode, resp.Header)
	}
	absent(t, g.dir, "big.bin")

	resp, _ = put(t, s.URL+"left.bin", strings.NewReader("abandoned"), 9, ietfHeaders("Upload-Complete", "?0")...)
	if resp.StatusCode != 201 {
		t.Fatalf("creation: %d", resp.StatusCode)
	}
	upload := s.URL + strings.TrimPrefix(resp.Header.Get("Location"), "/")
	if !waitFor(20*time.Second, func() bool { code, _, _ := uploadState(t, upload); return code == 404 }) {
		t.Fatalf("the upload outlived its expiry")
	}
	// The expiry counts the bytes freed once all of the upload is gone.
	if !waitFor(5*time.Second, func() bool { return metric(t, s, "largo_upload_pending_bytes") == 0 }) {
		t.Errorf("pending bytes %v after the expiry", metric(t, s, "largo_upload_pending_bytes"))
	}
	absent(t, g.dir, "left.bin")
}

// TestS3IETFTwoInstances: one upload to a bucket, appended to through two
// instances in turn, as behind a load balancer with no affinity.
func TestS3IETFTwoInstances(t *testing.T) {
	const part = 6 << 20
	src := filepath.Join(t.TempDir(), "parts.bin")
	want := writeRandom(t, src, 4*part+123, 43)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	srv := s3test.Start(t, s3test.Options{})
	a := startS3Largo(t, srv, "", "--upload", "--token", testToken)
	b := startS3Largo(t, srv, "", "--upload", "--token", testToken)
	resp, _ := put(t, a.URL+"parts.bin", strings.NewReader(string(data[:part])), part, ietfHeaders("Upload-Complete", "?0", "Upload-Length", strconv.Itoa(len(data)))...)
	if resp.StatusCode != 201 {
		t.Fatalf("creation: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	instances := []*server{b, a, b, a}
	for i, s := range instances {
		upload := s.URL + strings.TrimPrefix(loc, "/")
		start, end := int64((i+1)*part), int64(min((i+2)*part, len(data)))
		if code, off, _ := uploadState(t, upload); code != 204 || off != start {
			t.Fatalf("append %d: HEAD through instance %d: %d, offset %d; want %d", i, i%2, code, off, start)
		}
		last := i == len(instances)-1
		resp, body := send(t, "PATCH", upload, strings.NewReader(string(data[start:end])), end-start, appendHeaders(start, last)...)
		if !last && (resp.StatusCode != 204 || resp.Header.Get("Upload-Offset") != strconv.FormatInt(end, 10)) ||
			last && (resp.StatusCode != 201 || resp.Header.Get("Repr-Digest") != reprDigest(want)) {
			t.Fatalf("append %d: %d %v %s", i, resp.StatusCode, resp.Header, body)
		}
	}
	if got := objectSHA(t, srv, "parts.bin"); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	if keys := stateKeys(t, srv); len(keys) != 0 {
		t.Errorf("state left in the bucket: %v", keys)
	}
	if n := multipartUploads(t, srv); n != 0 {
		t.Errorf("%d multipart uploads left", n)
	}
}

// TestTusJSClientIETF: tus-js-client, speaking the IETF draft (-05, and
// -03) instead of tus, uploads to a folder's URL; the server is killed
// mid-upload and started again on the same address, and the client
// resumes by itself from the offset the new server reports.
func TestTusJSClientIETF(t *testing.T) {
	for _, proto := range []string{"ietf-draft-05", "ietf-draft-03"} {
		t.Run(proto, func(t *testing.T) { tusJSClientIETF(t, proto) })
	}
}

func tusJSClientIETF(t *testing.T, proto string) {
	const size, chunk, killAt = 48 << 20, 4 << 20, 16 << 20
	src := filepath.Join(t.TempDir(), "clip.bin")
	want := writeRandom(t, src, size, 47)
	dir := t.TempDir()
	s := startWriter(t, dir)
	client := nodeScript(t, "tus-upload.mjs", "--endpoint", s.URL+"videos/", "--file", src, "--name", "clip.bin",
		"--token", testToken, "--chunk", strconv.Itoa(chunk), "--protocol", proto, "--retries", "200,500,1000,2000,4000,8000,8000")
	out, err := client.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	client.Stderr = os.Stderr
	if err := client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Process.Kill(); client.Wait() })
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// next returns the client's next line that starts with prefix,
	// failing on an error, an early end, or a minute of silence.
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case line, ok := <-lines:
				switch {
				case !ok:
					t.Fatalf("the client ended without %q", prefix)
				case strings.HasPrefix(line, "error "):
					t.Fatalf("client: %s", line)
				case strings.HasPrefix(line, prefix):
					return strings.TrimPrefix(line, prefix)
				}
			case <-timeout:
				t.Fatalf("no %q from the client in a minute", prefix)
			}
		}
	}
	var accepted int64
	for accepted < killAt {
		fmt.Sscan(next("chunk "), &accepted)
	}
	s.cmd.Process.Kill()
	s.wait(5 * time.Second)
	absent(t, dir, "videos/clip.bin")
	s2 := startWriter(t, dir, "--listen", s.Addr)
	next("done ")
	if got := fileSHA(t, filepath.Join(dir, "videos", "clip.bin")); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	if r := metric(t, s2, "largo_bytes_received_total"); r > float64(size-accepted+2*chunk) {
		t.Errorf("the restarted server received %v bytes of the %d left: not resumed", r, size-accepted)
	}
	if p := metric(t, s2, "largo_upload_pending_bytes"); p != 0 {
		t.Errorf("pending bytes %v after the upload", p)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tus")); len(ents) != 0 {
		t.Errorf("%d staged files left", len(ents))
	}
}

// TestPutIETFKilled: largo put --protocol ietf is killed (SIGKILL) while
// the server stores its PUT, and run again: it resumes at the upload URL
// the 104 gave, and the stored bytes match.
func TestPutIETFKilled(t *testing.T) {
	const size = 256 << 20
	src := filepath.Join(t.TempDir(), "up.bin")
	want := writeRandom(t, src, size, 49)
	dir := t.TempDir()
	s := startWriter(t, dir)
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "LARGO_TOKEN=" + testToken}
	c := startClientEnv(t, env, "put", "--protocol", "ietf", src, s.URL+"videos/", "-q")
	// staged returns the bytes the server holds for the upload.
	staged := func() int64 {
		ents, _ := os.ReadDir(filepath.Join(dir, ".largo", "tus"))
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && !strings.Contains(e.Name(), ".") {
				return fi.Size()
			}
		}
		return 0
	}
	if !waitFor(60*time.Second, func() bool { return staged() >= 32<<20 }) {
		t.Fatalf("the server never held 32 MiB of the upload\n%s", c.stderr.String())
	}
	c.cmd.Process.Kill()
	c.wait(t, 30*time.Second)
	if held := staged(); held >= size {
		t.Fatalf("the server holds %d bytes after the kill; want part of %d", held, size)
	}
	absent(t, dir, "videos/up.bin")
	c = startClientEnv(t, env, "put", "--protocol", "ietf", src, s.URL+"videos/")
	if code := c.wait(t, 120*time.Second); code != 0 || !strings.Contains(c.stderr.String(), "resumed") {
		t.Fatalf("re-run: exit %d: %s", code, c.stderr.String())
	}
	if got := fileSHA(t, filepath.Join(dir, "videos", "up.bin")); got != want {
		t.Fatalf("stored sha %s; want %s", got, want)
	}
	if p := metric(t, s, "largo_upload_pending_bytes"); p != 0 {
		t.Errorf("pending bytes %v after the upload", p)
	}
}
