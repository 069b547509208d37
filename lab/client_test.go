package lab

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"largo/internal/testenv"
)

// needCurl skips the test without curl, or fails it under
// LARGO_TEST_STRICT=1.
func needCurl(t *testing.T) {
	t.Helper()
	testenv.Program(t, "curl")
}

// testFiles serves content with ranges at /ranged, without at /whole, and
// stores PUT bodies.
func testFiles(t *testing.T, content []byte) (*httptest.Server, chan []byte) {
	put := make(chan []byte, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ranged", func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "f.bin", time.Time{}, bytes.NewReader(content))
	})
	mux.HandleFunc("GET /whole", func(w http.ResponseWriter, r *http.Request) { w.Write(content) })
	mux.HandleFunc("PUT /up", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		put <- b
		w.WriteHeader(http.StatusCreated)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, put
}

func TestClients(t *testing.T) {
	content := make([]byte, 3<<20+5)
	x := xorshift(1)
	x.Read(content)
	srv, put := testFiles(t, content)
	for _, name := range []string{"go", "curl"} {
		t.Run(name, func(t *testing.T) {
			var cl fetcher = newGoClient(2)
			if name == "curl" {
				needCurl(t)
				cl = curlClient{}
			}
			defer cl.close()
			ctx := context.Background()
			res := cl.fetch(ctx, fetchReq{url: srv.URL + "/ranged", header: []string{"Accept-Encoding", "gzip"}})
			if err := res.check(200, int64(len(content))); err != nil || res.length != int64(len(content)) || res.encoding != "" {
				t.Fatalf("download: %+v, %v", res, err)
			}
			if res := cl.fetch(ctx, fetchReq{url: srv.URL + "/missing"}); res.check(200, -1) == nil || res.status != 404 {
				t.Fatalf("missing file: %+v", res)
			}

			out := filepath.Join(t.TempDir(), "f.bin")
			os.WriteFile(out, content[:1<<20], 0o644)
			res = cl.fetch(ctx, fetchReq{url: srv.URL + "/ranged", out: out, resume: true})
			got, _ := os.ReadFile(out)
			if res.status != 206 || res.bytes != int64(len(content)-1<<20) || !bytes.Equal(got, content) {
				t.Fatalf("resume: %+v; file of %d bytes equal: %v", res, len(got), bytes.Equal(got, content))
			}

			os.WriteFile(out, content[:1<<20], 0o644)
			res = cl.fetch(ctx, fetchReq{url: srv.URL + "/whole", out: out, resume: true})
			got, _ = os.ReadFile(out)
			if name == "go" && (res.status != 200 || !bytes.Equal(got, content)) {
				t.Fatalf("resume from a server without ranges: %+v; the Go client must start again", res)
			}
			if name == "curl" && (res.err == nil || !strings.Contains(res.err.Error(), "range")) {
				t.Fatalf("curl resume from a server without ranges: %+v", res)
			}

			up := filepath.Join(t.TempDir(), "up.bin")
			os.WriteFile(up, content, 0o644)
			res = cl.fetch(ctx, fetchReq{method: http.MethodPut, url: srv.URL + "/up", upload: up})
			if stored := <-put; res.status != 201 || !bytes.Equal(stored, content) {
				t.Fatalf("upload: %+v, server got %d bytes", res, len(stored))
			}
		})
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		res  fetchResult
		want string
	}{
		{fetchResult{status: 200, bytes: 10}, ""},
		{fetchResult{status: 200, bytes: 4}, "short body: 0.0 MB of 0.0 MB"},
		{fetchResult{status: 500}, "answered 500 Internal Server Error"},
		{fetchResult{err: io.ErrUnexpectedEOF}, "unexpected EOF"},
		{fetchResult{status: 200, bytes: 3e6, err: io.ErrUnexpectedEOF}, "body cut after 3.0 MB: unexpected EOF"},
		{fetchResult{status: 200, bytes: 5e6, err: fmt.Errorf("reading: %w", context.DeadlineExceeded)}, "timed out after 5.0 MB of body"},
	}
	for _, tt := range tests {
		err := tt.res.check(200, 10)
		if (err == nil) != (tt.want == "") || err != nil && err.Error() != tt.want {
			t.Errorf("check(%+v) = %v; want %q", tt.res, err, tt.want)
		}
	}
}
