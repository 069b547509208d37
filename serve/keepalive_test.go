package serve

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"largo/transfer"
)

// bodyCounter is a middleware outside the handler, as a metrics or
// logging wrapper would be: it counts the body bytes that pass through
// it, and passes ReadFrom and Unwrap through so that sendfile survives.
type bodyCounter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c bodyCounter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c bodyCounter) ReadFrom(src io.Reader) (int64, error) {
	n, err := c.ResponseWriter.(io.ReaderFrom).ReadFrom(src)
	c.n.Add(n)
	return n, err
}

func (c bodyCounter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// TestLargeFileKeepsConnection checks that large files of a folder, whole
// and as a range, are answered on one kept-alive HTTP/1.1 connection
// with small ones and a HEAD, and that a wrapper around the handler
// counts every body byte.
func TestLargeFileKeepsConnection(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 20<<20/16)
	h, _ := newTestHandler(t, map[string]string{"big.bin": big, "small.bin": "small"})
	var counted atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(bodyCounter{w, &counted}, r)
	}))
	srv.Config.ConnContext = transfer.ConnContext // as the server runs
	srv.Start()
	defer srv.Close()

	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	var total int64
	for i, tc := range []struct {
		method, path, rng string
		status            int
		want              string
	}{
		{"GET", "/big.bin", "", http.StatusOK, big},
		{"GET", "/big.bin", "bytes=1000-", http.StatusPartialContent, big[1000:]},
		{"HEAD", "/big.bin", "", http.StatusOK, ""},
		{"GET", "/small.bin", "", http.StatusOK, "small"},
		{"GET", "/big.bin", "", http.StatusOK, big},
	} {
		req, _ := http.NewRequest(tc.method, "http://"+srv.Listener.Addr().String()+tc.path, nil)
		if tc.rng != "" {
			req.Header.Set("Range", tc.rng)
		}
		if err := req.Write(c); err != nil {
			t.Fatalf("request %d on the same connection: %v", i+1, err)
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("request %d on the same connection: %v", i+1, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != tc.status || !bytes.Equal(got, []byte(tc.want)) {
			t.Fatalf("%s %s %s: %d, %d bytes of %d, %v", tc.method, tc.path, tc.rng, resp.StatusCode, len(got), len(tc.want), err)
		}
		if resp.Close {
			t.Errorf("%s %s %s: the answer says Connection: close", tc.method, tc.path, tc.rng)
		}
		total += int64(len(tc.want))
	}
	if counted.Load() != total {
		t.Errorf("the wrapper around the handler counted %d body bytes; %d were sent", counted.Load(), total)
	}
}
