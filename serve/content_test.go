package serve

import (
	"bytes"
	"context"

	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"largo"
)

// failingStore holds one file, "f.bin", whose reads fail once they pass
// failAt bytes: a store connection lost, or an object replaced, mid-body.
type failingStore struct {
	data   []byte
	failAt int64
}

func (s *failingStore) info() largo.Info {
	return largo.Info{Name: "f.bin", Size: int64(len(s.data)), ModTime: time.Unix(1e9, 0), ETag: `"v1"`}
}

func (s *failingStore) Stat(context.Context, string) (largo.Info, error) { return s.info(), nil }

func (s *failingStore) Open(_ context.Context, name string) (largo.File, error) {
	if name != "f.bin" {
		return nil, largo.ErrNotFound
	}
	return &failingFile{ReadSeeker: bytes.NewReader(s.data), s: s}, nil
}

func (s *failingStore) List(context.Context, string) iter.Seq2[largo.Info, error] {
	return func(func(largo.Info, error) bool) {}
}

type failingFile struct {
	io.ReadSeeker
	s   *failingStore
	pos int64
}

func (f *failingFile) Read(p []byte) (int, error) {
	if f.pos >= f.s.failAt {
		return 0, fmt.Errorf("changed since it was opened: %w", largo.ErrPrecondition)
	}
	p = p[:min(int64(len(p)), f.s.failAt-f.pos)]
	n, err := f.ReadSeeker.Read(p)
	f.pos += int64(n)
	return n, err
}

func (f *failingFile) Seek(off int64, whence int) (int64, error) {
	n, err := f.ReadSeeker.Seek(off, whence)
	f.pos = n
	return n, err
}

func (f *failingFile) Close() error     { return nil }
func (f *failingFile) Info() largo.Info { return f.s.info() }

// TestReadFailsMidBody: when the store fails after the headers are out, the
// connection is cut, so the client sees a broken transfer, never a
// response that looks complete; the log says why.
func TestReadFailsMidBody(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 1<<20)
	var log bytes.Buffer
	h := New(Config{Store: &failingStore{data: data, failAt: 300 << 10}, Logger: newTextLogger(&log)})
	srv := httptest.NewServer(h)
	defer srv.Close()

	for _, hdr := range [][2]string{{"", ""}, {"Range", "bytes=0-10,200000-400000"}, {"Range", "bytes=100-"}} {
		req, _ := http.NewRequest("GET", srv.URL+"/f.bin", nil)
		if hdr[0] != "" {
			req.Header.Set(hdr[0], hdr[1])
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("%s: %d, body of %d bytes read to a clean end; want a cut connection", hdr[1], resp.StatusCode, n)
		}
	}
	// A read that does not reach the failure completes.
	req, _ := http.NewRequest("GET", srv.URL+"/f.bin", nil)
	req.Header.Set("Range", "bytes=0-99")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 206 || len(b) != 100 {
		t.Fatalf("short range: %d, %d bytes, %v", resp.StatusCode, len(b), err)
	}

	srv.Close() // waits for the handlers, and their log lines
	if !strings.Contains(log.String(), "response cut") || !strings.Contains(log.String(), "changed since it was opened") {
		t.Errorf("log does not say why:\n%s", log.String())
	}
}

func TestContentType(t *testing.T) {
	for _, tt := range []struct{ stored, name, want string }{
		{"", "a.mp4", "video/mp4"},
		{"", "noext", ""}, // sniffed by ServeContent
		{"video/webm", "a.mp4", "video/webm"},
		{"application/octet-stream", "a.mp4", "video/mp4"},
		{"binary/octet-stream", "a.txt", "text/plain; charset=utf-8"},
		{"binary/octet-stream", "noext", "application/octet-stream"},
		{"application/octet-stream", "noext", "application/octet-stream"},
	} {
		if got := contentType(largo.Info{Name: tt.name, ContentType: tt.stored}); got != tt.want {
			t.Errorf("contentType(%q, stored %q) = %q; want %q", tt.name, tt.stored, got, tt.want)
		}
	}
}
