package serve

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"largo/ingest"
)

// TestUnreadBodies sends requests over a real connection whose bodies the
// handler never reads and the client never sends: each is answered, with
// Connection: close, and its connection closed, instead of held while
// net/http waits for the body. The idle timeout is longer than the test's
// patience: only giving the body up can close them in time.
func TestUnreadBodies(t *testing.T) {
	files := map[string]string{"small.txt": "hello", "dir/f": "x"}
	ro, _ := newTestHandler(t, files)
	ro.cfg.IdleTimeout = time.Minute
	rw, _, _ := newWriteHandler(t, files, Config{IdleTimeout: time.Minute}, ingest.Config{MaxSize: 1000})
	tests := []struct {
		name string
		h    *Handler
		req  string
		code int
	}{
		{"GET of a file", ro, "GET /small.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", 200},
		{"GET of a listing", ro, "GET /dir/ HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Length: 100\r\n\r\n", 200},
		{"HEAD", ro, "HEAD /small.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", 200},
		{"GET of what is not there", ro, "GET /nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", 404},
		{"an own endpoint", ro, "GET /_largo/healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", 200},
		{"PUT with writes off", ro, "PUT /new HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", 405},
		{"PUT without the token", rw, "PUT /new HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", 401},
		{"PUT over the limit", rw, "PUT /new HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\nContent-Length: 100000\r\n\r\n", 413},
		{"chunked PUT without the token", rw, "PUT /new HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tt.req)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: strings.Fields(tt.req)[0]})
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != tt.code || !resp.Close {
				t.Errorf("%d, Connection %q; want %d, close", resp.StatusCode, resp.Header.Get("Connection"), tt.code)
			}
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					t.Fatal("connection still open after the answer")
				}
			}
		})
	}
}
