//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"largo/internal/testenv"
)

// tmpfs mounts a tmpfs of size at dir, or skips the test (fails it under
// LARGO_TEST_STRICT) where that is not allowed.
func tmpfs(t *testing.T, dir, size string) {
	t.Helper()
	testenv.Tmpfs(t, dir, size, "to test a full or read-only disk")
}

// formBody is a multipart form of one file.
func formBody(name string, r io.Reader) (*bytes.Buffer, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", name)
	io.Copy(fw, r)
	mw.Close()
	return &b, mw.FormDataContentType()
}

// refusedStatus sends a request whose body the server may refuse before
// reading it all, and returns the status the server answered. The client
// must read it from the response: the server lingers after refusing a
// body, so that its answer is not lost in a reset. A client that met a
// reset anyway fails the test, and the status is then read from the
// server's access log line, for the test's other checks.
func refusedStatus(t *testing.T, s *server, method, url string, body io.Reader, size int64, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Errorf("%s %s: no answer read: %v", method, url, err)
	path := req.URL.Path
	code := 0
	waitFor(5*time.Second, func() bool {
		for line := range strings.SplitSeq(s.stderr.String(), "\n") {
			i := strings.Index(line, " status=")
			if strings.Contains(line, "msg=request method="+method+" path="+path+" ") && i >= 0 {
				fmt.Sscanf(line[i+1:], "status=%d", &code)
			}
		}
		return code != 0
	})
	if code == 0 {
		t.Fatalf("%s %s: %v, and no answer in the log", method, url, err)
	}
	return code
}

// TestWriteFaults: on a full disk and on a read-only one, a write of every
// protocol (PUT, a form, tus) is refused with 507 or a 500, leaves nothing
// partial, and gives its space back.
func TestWriteFaults(t *testing.T) {
	dir := t.TempDir()
	tmpfs(t, dir, "24m")
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("old"), 0o644)
	s := startWriter(t, dir)
	const big = 32 << 20 // more than the disk
	chunked := func(n int64) io.Reader { return io.MultiReader(io.LimitReader(zeros{}, n)) }
	var staged []string // tus uploads: kept for a resume until cancelled

	// Full: the length is refused before the body; a chunked body meets
	// the full disk mid-way.
	for _, tt := range []struct {
		name string
		send func() int
	}{
		{"PUT with a length", func() int {
			return refusedStatus(t, s, "PUT", s.URL+"big.bin", io.LimitReader(zeros{}, big), big, bearer...)
		}},
		{"PUT chunked", func() int {
			return refusedStatus(t, s, "PUT", s.URL+"big.bin", chunked(big), -1, bearer...)
		}},
		{"form", func() int {
			b, ct := formBody("big.bin", io.LimitReader(zeros{}, big))
			return refusedStatus(t, s, "POST", s.URL, b, int64(b.Len()), append([]string{"Content-Type", ct}, bearer...)...)
		}},
		{"tus", func() int {
			url, resp := tusCreate(t, s, big, map[string]string{"filename": "big.bin"}, bearer...)
			if resp.StatusCode != 201 {
				return resp.StatusCode
			}
			staged = append(staged, url)
			return refusedStatus(t, s, "PATCH", url, bytes.NewReader(make([]byte, big)), big, append([]string{"Tus-Resumable", "1.0.0",
				"Upload-Offset", "0", "Content-Type", "application/offset+octet-stream"}, bearer...)...)
		}},
		{"tus of unknown length", func() int {
			resp, _ := send(t, "POST", s.URL+"_largo/uploads/", nil, 0, append([]string{"Tus-Resumable", "1.0.0",
				"Upload-Defer-Length", "1", "Upload-Metadata", "filename YmlnLmJpbg=="}, bearer...)...)
			if resp.StatusCode != 201 {
				return resp.StatusCode
			}
			url := resp.Header.Get("Location")
			staged = append(staged, url)
			return refusedStatus(t, s, "PATCH", url, bytes.NewReader(make([]byte, big)), big, append([]string{"Tus-Resumable", "1.0.0",
				"Upload-Offset", "0", "Content-Type", "application/offset+octet-stream"}, bearer...)...)
		}},
	} {
		if code := tt.send(); code != http.StatusInsufficientStorage {
			t.Errorf("full disk, %s: %d; want 507", tt.name, code)
		}
		absent(t, dir, "big.bin")
	}
	noTemp(t, dir)
	// What a tus upload stored before the disk filled stays for its
	// resume, until the client cancels it (or it expires).
	for _, url := range staged {
		if r, _ := send(t, "DELETE", url, nil, 0, append([]string{"Tus-Resumable", "1.0.0"}, bearer...)...); r.StatusCode != 204 {
			t.Errorf("cancelling %s: %d", url, r.StatusCode)
		}
	}
	if !waitFor(10*time.Second, func() bool { return free(t, dir) > 20<<20 }) {
		t.Errorf("space not given back: %d bytes free", free(t, dir))
	}
	if r, _ := put(t, s.URL+"small.txt", strings.NewReader("fits"), 4, bearer...); r.StatusCode != 201 {
		t.Errorf("a small PUT after the full disk: %d", r.StatusCode)
	}

	// Read-only: every write is a server error, and changes nothing.
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	defer syscall.Mount("", dir, "", syscall.MS_REMOUNT, "")
	for _, tt := range []struct {
		name string
		send func() int
	}{
		{"PUT", func() int {
			r, _ := put(t, s.URL+"keep.txt", strings.NewReader("new"), 3, bearer...)
			return r.StatusCode
		}},
		{"form", func() int {
			b, ct := formBody("keep.txt", strings.NewReader("new"))
			r, _ := send(t, "POST", s.URL, b, int64(b.Len()), append([]string{"Content-Type", ct}, bearer...)...)
			return r.StatusCode
		}},
		{"tus", func() int {
			_, resp := tusCreate(t, s, 3, map[string]string{"filename": "keep.txt"}, bearer...)
			return resp.StatusCode
		}},
		{"DELETE", func() int {
			r, _ := send(t, "DELETE", s.URL+"keep.txt", nil, 0, bearer...)
			return r.StatusCode
		}},
	} {
		if code := tt.send(); code < 500 || code == http.StatusNotImplemented {
			t.Errorf("read-only disk, %s: %d; want a server error", tt.name, code)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "old" {
		t.Errorf("keep.txt holds %q", b)
	}
	if r := get(t, s.URL+"keep.txt"); r.StatusCode != 200 {
		t.Errorf("reads on a read-only disk: %d", r.StatusCode)
	}
}

// free returns the bytes free on dir's filesystem.
func free(t *testing.T, dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// TestFileChangedWhileServed: a file truncated, or replaced, while a slow
// client downloads it: the download is cut short (never padded or
// spliced into a complete-looking answer), the server goes on, and the
// outcome is in the log.
func TestFileChangedWhileServed(t *testing.T) {
	for _, change := range []string{"truncated", "replaced"} {
		t.Run(change, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f.bin")
			writeRandom(t, p, 64<<20, 7)
			s := startServer(t, dir, "--idle-timeout", "10s")
			c, err := net.Dial("tcp", s.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.(*net.TCPConn).SetReadBuffer(64 << 10)
			fmt.Fprintf(c, "GET /f.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET: %v", err)
			}
			head := make([]byte, 4<<20)
			if _, err := io.ReadFull(resp.Body, head); err != nil {
				t.Fatal(err)
			}
			if change == "truncated" {
				os.Truncate(p, 8<<20)
			} else {
				writeRandom(t, p+".new", 64<<20, 8)
				os.Rename(p+".new", p)
			}
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			n, err := io.Copy(io.Discard, resp.Body)
			if change == "truncated" && (err == nil || 4<<20+n >= 64<<20) {
				t.Errorf("truncated mid-download: %d more bytes, %v; want the connection cut short", n, err)
			}
			if change == "replaced" && (err != nil || 4<<20+n != 64<<20) {
				// The open file is the old one: it is sent whole.
				t.Errorf("replaced mid-download: %d more bytes, %v; want the old version whole", n, err)
			}
			if r := get(t, s.URL+"f.bin"); r.StatusCode != 200 {
				t.Errorf("the server after: %d", r.StatusCode)
			}
			if change == "truncated" && !waitFor(5*time.Second, func() bool { return strings.Contains(s.stderr.String(), "outcome=error") }) {
				t.Errorf("no outcome=error logged:\n%s", tail(s.stderr.String(), 2048))
			}
		})
	}
}
