//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestDownloadFull(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "data.bin"), 64<<20+7, 1)
	s := startServer(t, dir)
	checkFullDownload(t, s.URL+"data.bin", want, 64<<20+7)
}

// checkFullDownload downloads u with Go's client and with curl, and checks
// the length and the sha256 of each.
func checkFullDownload(t *testing.T, u, want string, size int64) {
	t.Helper()
	resp := get(t, u)
	got, n := bodySHA(t, resp.Body)
	if resp.StatusCode != 200 || got != want || n != size || resp.ContentLength != n {
		t.Fatalf("Go client: %d, %d bytes (Content-Length %d), sha %s", resp.StatusCode, n, resp.ContentLength, got)
	}

	curl := need(t, "curl")
	out := filepath.Join(t.TempDir(), "curl.bin")
	if b, err := exec.Command(curl, "-sSf", "-o", out, u).CombinedOutput(); err != nil {
		t.Fatalf("curl: %v %s", err, b)
	}
	if got := fileSHA(t, out); got != want {
		t.Fatalf("curl download sha %s", got)
	}
}

func TestRanges(t *testing.T) {
	dir := t.TempDir()
	writeRandom(t, filepath.Join(dir, "r.bin"), 1<<20, 2)
	data, _ := os.ReadFile(filepath.Join(dir, "r.bin"))
	s := startServer(t, dir)
	checkRanges(t, s.URL+"r.bin", data)
}

// checkRanges sends ranges and conditional requests for u, whose content
// is data, 1 MiB long.
func checkRanges(t *testing.T, u string, data []byte) {
	t.Helper()
	const size = 1 << 20
	if len(data) != size {
		t.Fatalf("checkRanges needs 1 MiB of data, got %d bytes", len(data))
	}
	etag := get(t, u).Header.Get("ETag")
	lastMod := get(t, u).Header.Get("Last-Modified")
	if etag == "" || lastMod == "" {
		t.Fatal("no ETag or Last-Modified")
	}
	tests := []struct {
		name  string
		hdr   []string
		code  int
		body  []byte
		crang string
	}{
		{"first bytes", []string{"Range", "bytes=0-99"}, 206, data[:100], "bytes 0-99/1048576"},
		{"middle", []string{"Range", "bytes=5000-5999"}, 206, data[5000:6000], "bytes 5000-5999/1048576"},
		{"suffix", []string{"Range", "bytes=-500"}, 206, data[size-500:], "bytes 1048076-1048575/1048576"},
		{"open-ended", []string{"Range", "bytes=1048000-"}, 206, data[1048000:], "bytes 1048000-1048575/1048576"},
		{"end past size clamps", []string{"Range", "bytes=1048570-9999999"}, 206, data[1048570:], "bytes 1048570-1048575/1048576"},
		{"unsatisfiable", []string{"Range", "bytes=2000000-"}, 416, nil, "bytes */1048576"},
		{"if-range current etag", []string{"Range", "bytes=0-9", "If-Range", etag}, 206, data[:10], "bytes 0-9/1048576"},
		{"if-range stale etag", []string{"Range", "bytes=0-9", "If-Range", `"old"`}, 200, data, ""},
		{"if-range date", []string{"Range", "bytes=0-9", "If-Range", lastMod}, 206, data[:10], "bytes 0-9/1048576"},
		{"if-none-match", []string{"If-None-Match", etag}, 304, nil, ""},
		{"if-none-match list", []string{"If-None-Match", `"a", ` + etag}, 304, nil, ""},
		{"if-modified-since", []string{"If-Modified-Since", lastMod}, 304, nil, ""},
		{"bad range ignored", []string{"Range", "bits=0-9"}, 200, data, ""},
	}
	for _, tt := range tests {
		resp := get(t, u, tt.hdr...)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.code || resp.Header.Get("Content-Range") != tt.crang {
			t.Errorf("%s: %d, Content-Range %q", tt.name, resp.StatusCode, resp.Header.Get("Content-Range"))
			continue
		}
		if tt.body != nil && !bytes.Equal(b, tt.body) {
			t.Errorf("%s: body of %d bytes differs", tt.name, len(b))
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", tt.name)
		}
	}

	// Several ranges: multipart/byteranges with each part's bytes.
	resp := get(t, u, "Range", "bytes=0-9,100-199,-5")
	mt, params, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != 206 || mt != "multipart/byteranges" {
		t.Fatalf("multiple ranges: %d %s", resp.StatusCode, mt)
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	wantParts := [][]byte{data[:10], data[100:200], data[size-5:]}
	for i, want := range wantParts {
		p, err := mr.NextPart()
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		b, _ := io.ReadAll(p)
		if !bytes.Equal(b, want) {
			t.Errorf("part %d (%s): wrong bytes", i, p.Header.Get("Content-Range"))
		}
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Errorf("more parts than ranges: %v", err)
	}
}

// TestCurlResume downloads half a file, then lets curl -C - finish it.
func TestCurlResume(t *testing.T) {
	need(t, "curl")
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "v.mp4"), 32<<20, 3)
	s := startServer(t, dir)
	data, _ := os.ReadFile(filepath.Join(dir, "v.mp4"))
	checkCurlResume(t, s.URL+"v.mp4", data[:13<<20+17], int64(len(data)), want)
}

// checkCurlResume lets curl -C - finish a download of u (size bytes, with
// sha256 want) of which it has the first bytes have, and checks that it
// fetched only the missing bytes and that the result is whole.
func checkCurlResume(t *testing.T, u string, have []byte, size int64, want string) {
	t.Helper()
	curl := need(t, "curl")
	out := filepath.Join(t.TempDir(), "resumed")
	os.WriteFile(out, have, 0o644)
	b, err := exec.Command(curl, "-sSf", "-C", "-", "-o", out, "-w", "%{http_code} %{size_download}", u).CombinedOutput()
	if err != nil {
		t.Fatalf("curl -C -: %v %s", err, b)
	}
	if got := string(b); got != fmt.Sprintf("206 %d", size-int64(len(have))) {
		t.Errorf("curl reported %q; want a 206 of the missing bytes only", got)
	}
	if got := fileSHA(t, out); got != want {
		t.Fatalf("resumed file sha %s; want %s", got, want)
	}
}

// TestPast4GiB serves a sparse file past 4 GiB whole, and a range near its
// end.
func TestPast4GiB(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "disk.img")
	const size = 4<<30 + 12345
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	tailBytes := []byte("the end of a very large file")
	if _, err := f.WriteAt(tailBytes, size-int64(len(tailBytes))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	s := startServer(t, dir)

	resp := get(t, s.URL+"disk.img", "Range", fmt.Sprintf("bytes=%d-", size-int64(len(tailBytes))))
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 206 || string(b) != string(tailBytes) {
		t.Fatalf("range at the end: %d %q", resp.StatusCode, b)
	}
	resp = get(t, s.URL+"disk.img")
	if resp.ContentLength != size {
		t.Fatalf("Content-Length %d; want %d", resp.ContentLength, int64(size))
	}
	// Count the bytes and keep the last few, rather than hash 4 GiB.
	var last lastBytes
	n, err := io.Copy(&last, resp.Body)
	if err != nil || n != size || !bytes.HasSuffix(last.b, tailBytes) {
		t.Fatalf("read %d of %d bytes, %v", n, int64(size), err)
	}
}

// lastBytes is a writer that keeps the last 64 bytes written to it.
type lastBytes struct{ b []byte }

func (l *lastBytes) Write(p []byte) (int, error) {
	l.b = append(l.b, p[max(0, len(p)-64):]...)
	if len(l.b) > 64 {
		l.b = l.b[len(l.b)-64:]
	}
	return len(p), nil
}

// TestAbortedDownloads aborts 50 downloads mid-way and checks that the
// server's descriptors return to their idle count.
func TestAbortedDownloads(t *testing.T) {
	dir := t.TempDir()
	const size = 256 << 20
	f, _ := os.Create(filepath.Join(dir, "big.iso"))
	f.Truncate(size)
	f.Close()
	s := startServer(t, dir)
	get(t, s.URL+"_largo/healthz") // warm up the runtime's descriptors
	idle := s.idleFDs()

	abortDownloads(t, s.Addr, "/big.iso", 50)
	if !waitFor(5*time.Second, func() bool { return s.fds() <= idle }) {
		t.Fatalf("descriptors: %d after the aborts, %d idle", s.fds(), idle)
	}
	if !waitFor(2*time.Second, func() bool { return strings.Contains(s.stderr.String(), "outcome=aborted") }) {
		t.Error("no aborted outcome in the access log")
	}
}

// abortDownloads starts n downloads of path at once, reads 1 MiB of each
// (headers and part of the body) and resets its connection, as a killed
// client does.
func abortDownloads(t *testing.T, addr, path string, n int) {
	t.Helper()
	var wg sync.WaitGroup
	received := make([]int64, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
			received[i], _ = io.CopyN(io.Discard, c, 1<<20)
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}()
	}
	wg.Wait()
	for i, got := range received {
		if got != 1<<20 {
			t.Fatalf("download %d received %d bytes before the abort; want 1 MiB", i, got)
		}
	}
}

// TestStalledClient sends a request and never reads: the server must not
// read the file ahead of the socket, and must cut the client after the
// idle timeout, closing the file. (What the stall costs in memory is
// BenchmarkStalledClient's figure.)
func TestStalledClient(t *testing.T) {
	dir := t.TempDir()
	const size = 512 << 20
	p := filepath.Join(dir, "stall.bin")
	f, _ := os.Create(p)
	f.Truncate(size)
	f.Close()
	os.WriteFile(filepath.Join(dir, warmUpFile), []byte(warmUpBody), 0o644)
	s := startServer(t, dir, "--idle-timeout", "3s")
	s.warmUp(warmUpFile)
	read0, fds0 := s.rchar(), s.fds()

	c := stalledGet(t, s.Addr, "/stall.bin")
	time.Sleep(1500 * time.Millisecond) // the client stalls

	read := s.rchar() - read0
	if read > 16<<20 {
		t.Errorf("server read %d MiB of the file for a client that read nothing", read>>20)
	}
	if n, _ := fdsTo(s, p); n != 1 {
		t.Errorf("%d descriptors on the file during the transfer; want 1", n)
	}
	// After the idle timeout the file and the connection are closed.
	if !waitFor(6*time.Second, func() bool { n, _ := fdsTo(s, p); return n == 0 && s.fds() <= fds0 }) {
		n, _ := fdsTo(s, p)
		t.Fatalf("after the idle timeout: %d descriptors on the file, %d in all (%d idle)", n, s.fds(), fds0)
	}
	if !waitFor(2*time.Second, func() bool { return strings.Contains(s.stderr.String(), "outcome=timeout") }) {
		t.Error("no timeout outcome in the access log")
	}
	// The client sees its connection end after whatever the buffers held.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("connection still open after the idle timeout (%d bytes)", n)
	}
	if n >= size {
		t.Fatalf("stalled client got the whole file")
	}
}

// stalledGet sends a GET of path on a connection with a small receive
// buffer, and never reads: a client that stalls. The connection is closed
// when the test ends.
func stalledGet(t testing.TB, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
	return c
}

// TestTraversal sends paths that try to leave the served folder, raw on the
// wire so that no client cleans them first.
func TestTraversal(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "root")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(base, "secret.txt"), []byte("OUTSIDE-SECRET"), 0o644)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("DOTFILE-SECRET"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("DOTDIR-SECRET"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".largo", "tmp"), 0o755)
	os.WriteFile(filepath.Join(dir, ".largo", "tmp", "upload"), []byte("STATE-SECRET"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "ok.txt"), []byte("inside"), 0o644)
	os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "abs-link"))
	os.Symlink("../secret.txt", filepath.Join(dir, "rel-link"))
	os.Symlink("../../secret.txt", filepath.Join(dir, "sub", "deep-link"))
	os.Symlink(base, filepath.Join(dir, "dir-link"))
	os.Symlink("/etc", filepath.Join(dir, "etc-link"))
	os.Symlink("sub/ok.txt", filepath.Join(dir, "good-link"))
	os.Symlink(".env", filepath.Join(dir, "envlink-in-root"))
	s := startServer(t, dir)

	paths := []string{
		"/../secret.txt",
		"/../../../../etc/passwd",
		"/sub/../../secret.txt",
		"/%2e%2e/secret.txt",
		"/%2E%2E/secret.txt",
		"/%2e%2e%2fsecret.txt",
		"/sub/%2e%2e/%2e%2e/secret.txt",
		"/%252e%252e/secret.txt",
		"/%252e%252e%252fsecret.txt",
		"/..%2fsecret.txt",
		"/..%5csecret.txt",
		"/..\\secret.txt",
		"/sub\\..\\..\\secret.txt",
		"/%5c..%5c..%5csecret.txt",
		"/secret.txt%00.png",
		"/sub/ok.txt%00",
		"//etc/passwd",
		"///../secret.txt",
		"/./../secret.txt",
		"/sub/./../../secret.txt",
		"/abs-link",
		"/rel-link",
		"/sub/deep-link",
		"/dir-link/secret.txt",
		"/etc-link/passwd",
		"/etc-link/",
		"/.env",
		"/%2eenv",
		"/.git/config",
		"/%2egit/config",
		"/.largo/tmp/upload",
		"/.largo/",
		"/sub/..%2f..%2fsecret.txt",
		"/..;/secret.txt",
		"/%c0%ae%c0%ae/secret.txt",
		"/sub/%c0%ae%c0%ae/%c0%ae%c0%ae/secret.txt",
		"http://localhost/../secret.txt",
	}
	secrets := []string{"OUTSIDE-SECRET", "DOTFILE-SECRET", "DOTDIR-SECRET", "STATE-SECRET", "root:x:0:0"}
	for _, p := range paths {
		code, body := rawGet(t, s.Addr, p)
		if code != 400 && code != 404 {
			t.Errorf("GET %s: %d; want 400 or 404", p, code)
		}
		for _, sec := range secrets {
			if strings.Contains(body, sec) {
				t.Errorf("GET %s leaked %s", p, sec)
			}
		}
	}
	// A dotfile reached through a symlink inside the root is the owner's
	// choice; links that stay inside work.
	if code, body := rawGet(t, s.Addr, "/good-link"); code != 200 || body != "inside" {
		t.Errorf("symlink inside the root: %d %q", code, body)
	}
	// Listings show neither hidden names nor links that lead out.
	_, body := rawGet(t, s.Addr, "/")
	for _, name := range []string{".env", ".git", ".largo", "abs-link", "rel-link", "dir-link", "etc-link"} {
		if strings.Contains(body, ">"+name) {
			t.Errorf("listing shows %s", name)
		}
	}
}

// rawGet sends a request line exactly as given and returns the status and
// body.
func rawGet(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDrain sends SIGTERM while downloads run: they complete, new
// connections are refused, and largo exits 0.
func TestDrain(t *testing.T) {
	dir := t.TempDir()
	want := writeRandom(t, filepath.Join(dir, "d.bin"), 48<<20, 4)
	s := startServer(t, dir, "--drain-timeout", "60s")
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	started := make(chan struct{}, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Get(s.URL + "d.bin")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			// Read slowly at first, so the transfer is in flight at the signal.
			buf := make([]byte, 1<<20)
			io.ReadFull(resp.Body, buf)
			started <- struct{}{}
			time.Sleep(1500 * time.Millisecond)
			rest, n := bodySHA(t, io.MultiReader(bytes.NewReader(buf), resp.Body))
			if rest != want {
				errs <- fmt.Errorf("download ended with %d bytes, sha %s", n, rest)
			}
		}()
	}
	for range 3 {
		<-started
	}
	s.signal(syscall.SIGTERM)
	d := net.Dialer{Timeout: 2 * time.Second}
	if !waitFor(10*time.Second, func() bool {
		c, err := d.DialContext(context.Background(), "tcp", s.Addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	}) {
		t.Error("new connections were still accepted 10s into the drain")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if code := s.wait(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d; want 0", code)
	}
}

func fdsTo(s *server, path string) (int, error) { return procFDsTo(s.PID, path) }
