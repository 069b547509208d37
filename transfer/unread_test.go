package transfer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// serveAnswering starts a server whose handler reads at most read bytes of
// the request body through a Body tied to its Response, then answers with
// status and size bytes, as largo's handlers do with a refused write. The
// idle timeout is long: only giving the body up may close a connection
// within a test's patience.
func serveAnswering(t *testing.T, read int64, status, size int) string {
	t.Helper()
	srv := httptest.NewServer(answering(read, status, size))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

func answering(read int64, status, size int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tw := NewResponse(w, Options{IdleTimeout: time.Minute})
		body := tw.Body(r, BodyOptions{IdleTimeout: time.Minute})
		io.CopyN(io.Discard, body, read)
		tw.WriteHeader(status)
		tw.Write([]byte(strings.Repeat("x", size)))
		tw.Finish()
		body.Close()
	}
}

// TestUnreadBodyClosesConnection sends requests whose bodies never come
// (or come only in part) to a handler that answers without reading them:
// the answer must arrive, say Connection: close, and the connection must
// close at once, instead of net/http waiting, with no deadline, for bytes
// it would only discard.
func TestUnreadBodyClosesConnection(t *testing.T) {
	tests := []struct {
		name         string
		head, sent   string
		read         int64
		status, size int
	}{
		{"GET with a body that never comes", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "", 0, 200, 10},
		{"a large answer first", "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "", 0, 200, 1 << 20},
		{"refused PUT", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n", "", 0, 405, 10},
		{"refused PUT expecting 100-continue", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n", "", 0, 401, 10},
		{"chunked, never ended", "PUT / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", "5\r\nhello\r\n", 0, 413, 10},
		{"read in part", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", strings.Repeat("y", 5000), 1000, 413, 10},
		{"read in part, past 256 KiB", "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n", strings.Repeat("y", 5000), 1000, 413, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", serveAnswering(t, tt.read, tt.status, tt.size))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tt.head+tt.sent)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			if resp.StatusCode != tt.status || !resp.Close {
				t.Errorf("got %d, Connection %q; want %d and close", resp.StatusCode, resp.Header.Get("Connection"), tt.status)
			}
			if n, err := io.Copy(io.Discard, resp.Body); n != int64(tt.size) || err != nil {
				t.Fatalf("answer body: %d bytes, %v", n, err)
			}
			// The server closes: end of stream, not our deadline.
			if n, err := br.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
				t.Fatalf("connection still open after the answer: read %d, %v", n, err)
			}
		})
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// TestReadBodyKeepsConnection checks that a body read to its end leaves
// the connection open for the next request.
func TestReadBodyKeepsConnection(t *testing.T) {
	c, err := net.Dial("tcp", serveAnswering(t, 1<<20, 201, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i := range 2 {
		fmt.Fprintf(c, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 201 || resp.Close {
			t.Fatalf("request %d: %d, close %v", i, resp.StatusCode, resp.Close)
		}
	}
}

// TestUnreadBodyHTTP2 checks that over HTTP/2 an unread body costs its
// stream only: the connection is not torn down for the next request.
func TestUnreadBodyHTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(answering(0, 401, 10))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client := srv.Client()
	var reused []bool
	for range 2 {
		pr, pw := io.Pipe() // a body that never ends
		defer pw.Close()
		req, _ := http.NewRequest("PUT", srv.URL, pr)
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
		}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 401 || resp.ProtoMajor != 2 {
			t.Fatalf("%s %d", resp.Proto, resp.StatusCode)
		}
	}
	if len(reused) != 2 || !reused[1] {
		t.Fatalf("connection reuse: %v", reused)
	}
}
