package lab

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNaiveHandler(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.bin"), []byte("buffered"), 0o644)
	os.WriteFile(filepath.Join(dir, ".secret"), []byte("hidden"), 0o644)
	f, _ := os.Create(filepath.Join(dir, "huge.img"))
	f.Truncate(NaiveMaxFile + 1) // sparse: refused before it is read
	f.Close()
	srv := httptest.NewServer(NaiveHandler(dir))
	defer srv.Close()

	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/a.bin", "", 200, "buffered"},
		{"GET", "/missing", "", 404, "not found\n"},
		{"GET", "/.secret", "", 404, "not found\n"},
		{"GET", "/../etc/passwd", "", 404, "not found\n"},
		{"GET", "/huge.img", "", 500, "file too large to buffer: 2147483648 bytes\n"},
		{"PUT", "/new.bin", "uploaded", 201, ""},
		{"GET", "/new.bin", "", 200, "uploaded"},
		{"DELETE", "/a.bin", "", 405, "method not allowed\n"},
	}
	for _, tt := range tests {
		code, body := do(tt.method, tt.path, tt.body)
		if code != tt.code || body != tt.want {
			t.Errorf("%s %s: %d %q; want %d %q", tt.method, tt.path, code, body, tt.code, tt.want)
		}
	}
	// It knows no ranges: that is the point.
	req, _ := http.NewRequest("GET", srv.URL+"/a.bin", nil)
	req.Header.Set("Range", "bytes=2-")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != 8 {
		t.Fatalf("range request: %d, %d bytes; want the whole file", resp.StatusCode, resp.ContentLength)
	}
}
