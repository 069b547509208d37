package serve

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"largo/transfer"
)

// TestLargeFileClosesConnection checks which answers leave by the
// connection's own sendfile (package transfer), and so say Connection:
// close: a GET of a large file of the operating system, and nothing else.
func TestLargeFileClosesConnection(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 20<<20/16)
	h, _ := newTestHandler(t, map[string]string{"big.bin": big, "small.bin": "small"})
	objects := New(Config{Store: &failingStore{data: []byte(big), failAt: int64(len(big)) + 1}})
	for _, tt := range []struct {
		name      string
		h         http.Handler
		method    string
		path      string
		wantClose bool
	}{
		{"GET of a large file", h, "GET", "/big.bin", true},
		{"HEAD of a large file", h, "HEAD", "/big.bin", false},
		{"GET of a small file", h, "GET", "/small.bin", false},
		{"GET of a large object that is not a file", objects, "GET", "/f.bin", false},
	} {
		srv := httptest.NewUnstartedServer(tt.h)
		srv.Config.ConnContext = transfer.ConnContext
		srv.Start()
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d, %v", tt.name, resp.StatusCode, err)
		}
		if tt.method == "GET" && tt.path != "/small.bin" && !bytes.Equal(got, []byte(big)) {
			t.Errorf("%s: body of %d bytes differs", tt.name, len(got))
		}
		if resp.Close != tt.wantClose {
			t.Errorf("%s: Connection: close %v, want %v", tt.name, resp.Close, tt.wantClose)
		}
	}
}
