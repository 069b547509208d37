package quick

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// lane is a server whose handler tells, in a field of each answer,
// whether the lane answered it; the lane takes the paths under /k/.
type lane struct {
	srv  *http.Server
	addr string
	mu   sync.Mutex
	seen []string // "lane" or "net/http", one per request
}

func newLane(t *testing.T, h http.HandlerFunc, set ...func(*http.Server)) *lane {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &lane{addr: ln.Addr().String()}
	l.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 5 * time.Second}
	l.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		by := "net/http"
		if _, ok := w.(*response); ok {
			by = "lane"
		}
		l.mu.Lock()
		l.seen = append(l.seen, by)
		l.mu.Unlock()
		w.Header().Set("Answered-By", by)
		if h != nil {
			h(w, r)
			return
		}
		io.WriteString(w, "body of "+r.URL.Path)
	})
	for _, f := range set {
		f(l.srv)
	}
	takes := func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/k/") }
	go l.srv.Serve(NewListener(ln, Config{Server: l.srv, Takes: takes}))
	t.Cleanup(func() { l.srv.Close() })
	return l
}

// conn dials the server, with a deadline on everything.
func (l *lane) conn(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", l.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

// read reads an answer to a GET and returns it with its body.
func read(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func get(path string) string { return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n" }

func TestLaneThenNetHTTP(t *testing.T) {
	l := newLane(t, nil)
	c, br := l.conn(t)
	// Two the lane takes, pipelined with one it does not, then one it
	// would take: net/http's, as the connection is handed over.
	io.WriteString(c, get("/k/a")+get("/k/b")+get("/other"))
	for _, want := range []struct{ path, by string }{{"/k/a", "lane"}, {"/k/b", "lane"}, {"/other", "net/http"}} {
		resp, body := read(t, br, "GET")
		if resp.StatusCode != 200 || body != "body of "+want.path || resp.Header.Get("Answered-By") != want.by {
			t.Fatalf("%s: %d %q by %s; want by %s", want.path, resp.StatusCode, body, resp.Header.Get("Answered-By"), want.by)
		}
		if resp.ContentLength != int64(len(body)) || resp.Header.Get("Date") == "" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
			t.Fatalf("%s: length %d, Date %q, type %q", want.path, resp.ContentLength, resp.Header.Get("Date"), resp.Header.Get("Content-Type"))
		}
	}
	io.WriteString(c, get("/k/c"))
	if resp, _ := read(t, br, "GET"); resp.Header.Get("Answered-By") != "net/http" {
		t.Fatal("a request after the hand-over answered by the lane")
	}
}

// What the lane does not take whole goes to net/http, which answers it
// as it would without the lane.
func TestLaneLeavesToNetHTTP(t *testing.T) {
	for _, tt := range []struct {
		name, req string
		status    int
	}{
		{"a body", "POST /k/a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", 200},
		{"a GET with a length", "GET /k/a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", 200},
		{"chunked", "GET /k/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 200},
		{"Expect", "GET /k/a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n\r\n", 200},
		{"Upgrade", "GET /k/a HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 200},
		{"HTTP/1.0", "GET /k/a HTTP/1.0\r\nHost: x\r\n\r\n", 200},
		{"no Host", "GET /k/a HTTP/1.1\r\n\r\n", 400},
		{"two Hosts", "GET /k/a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400},
		{"a bad field name", "GET /k/a HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n", 400},
		{"a head past the buffer", "GET /k/a HTTP/1.1\r\nHost: x\r\nBig: " + strings.Repeat("v", 5000) + "\r\n\r\n", 200},
		{"an absolute target", "GET http://x/k/a HTTP/1.1\r\nHost: x\r\n\r\n", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLane(t, nil)
			c, br := l.conn(t)
			io.WriteString(c, tt.req)
			resp, _ := read(t, br, "GET")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d; want %d", resp.StatusCode, tt.status)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, by := range l.seen {
				if by == "lane" {
					t.Fatal("answered by the lane")
				}
			}
		})
	}
}

func TestLaneClose(t *testing.T) {
	l := newLane(t, nil)
	c, br := l.conn(t)
	io.WriteString(c, "GET /k/a HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	resp, body := read(t, br, "GET")
	if body != "body of /k/a" || !resp.Close || resp.Header.Get("Answered-By") != "lane" {
		t.Fatalf("%q, close %v, by %s", body, resp.Close, resp.Header.Get("Answered-By"))
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the answer: %v; want the connection closed", err)
	}
}

func TestLaneHEAD(t *testing.T) {
	l := newLane(t, nil)
	c, br := l.conn(t)
	io.WriteString(c, "HEAD /k/a HTTP/1.1\r\nHost: x\r\n\r\n"+get("/k/b"))
	resp, body := read(t, br, "HEAD")
	if body != "" || resp.Header.Get("Content-Length") != "12" || resp.Header.Get("Answered-By") != "lane" {
		t.Fatalf("HEAD: %q, length %q, by %s", body, resp.Header.Get("Content-Length"), resp.Header.Get("Answered-By"))
	}
	if _, body := read(t, br, "GET"); body != "body of /k/b" {
		t.Fatalf("the GET after: %q", body)
	}
}

// A large answer leaves as it comes: with its length when the handler
// gave one, in chunks otherwise; a flush sends what is gathered.
func TestLaneLargeAnswers(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*maxBuffered/16)
	l := newLane(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/k/length" {
			w.Header().Set("Content-Length", "196608")
		}
		if r.URL.Path == "/k/flush" {
			io.WriteString(w, "first")
			w.(http.Flusher).Flush()
			io.WriteString(w, " second")
			return
		}
		for i := 0; i < len(big); i += 1000 {
			w.Write(big[i:min(i+1000, len(big))])
		}
	})
	c, br := l.conn(t)
	io.WriteString(c, get("/k/length")+get("/k/chunked")+get("/k/flush"))
	for _, path := range []string{"/k/length", "/k/chunked"} {
		resp, body := read(t, br, "GET")
		if body != string(big) || resp.Header.Get("Answered-By") != "lane" {
			t.Fatalf("%s: %d bytes by %s", path, len(body), resp.Header.Get("Answered-By"))
		}
		if chunked := len(resp.TransferEncoding) > 0; chunked != (path == "/k/chunked") {
			t.Fatalf("%s: transfer encoding %v", path, resp.TransferEncoding)
		}
	}
	if _, body := read(t, br, "GET"); body != "first second" {
		t.Fatalf("flushed: %q", body)
	}
}

// A field's line breaks never split the answer.
func TestLaneFieldValuesCannotSplit(t *testing.T) {
	l := newLane(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["X-Name"] = []string{"a\r\nInjected: yes"}
		io.WriteString(w, "ok")
	})
	c, br := l.conn(t)
	io.WriteString(c, get("/k/a"))
	resp, _ := read(t, br, "GET")
	if resp.Header.Get("Injected") != "" || resp.Header.Get("X-Name") != "a  Injected: yes" {
		t.Fatalf("fields: %v", resp.Header)
	}
}

// A handler that panics, or writes less than its length, gets its
// connection closed, as net/http does.
func TestLaneClosesAfterFailedAnswers(t *testing.T) {
	l := newLane(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/k/panic":
			panic("the handler failed")
		case "/k/abort":
			panic(http.ErrAbortHandler)
		case "/k/short":
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "short")
		}
	}, func(s *http.Server) { s.ErrorLog = log.New(io.Discard, "", 0) })
	for _, path := range []string{"/k/panic", "/k/abort", "/k/short"} {
		c, br := l.conn(t)
		c.SetDeadline(time.Now().Add(2 * time.Second)) // the idle timeout is 5 s
		io.WriteString(c, get(path))
		b, err := io.ReadAll(br)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("%s: %v", path, err)
		}
		if path != "/k/short" && len(b) != 0 {
			t.Fatalf("%s: %q sent; want nothing but the close", path, b)
		}
	}
}

// A server's Shutdown ends the connections waiting in the lane at once,
// not after net/http's five seconds for a new connection.
func TestLaneShutdown(t *testing.T) {
	l := newLane(t, nil)
	c, br := l.conn(t)
	io.WriteString(c, get("/k/a"))
	read(t, br, "GET")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	if err := l.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v after %s", err, time.Since(start))
	}
	if _, err := br.ReadByte(); err == nil {
		t.Fatal("the connection still open after the Shutdown")
	}
}

// The idle timeout applies between the lane's requests.
func TestLaneIdleTimeout(t *testing.T) {
	l := newLane(t, nil, func(s *http.Server) { s.IdleTimeout = 200 * time.Millisecond })
	c, br := l.conn(t)
	io.WriteString(c, get("/k/a"))
	read(t, br, "GET")
	start := time.Now()
	if _, err := br.ReadByte(); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("after the idle timeout: %v, %s", err, time.Since(start))
	}
}

// A head that trickles in, a byte at a time, is cut at the header timeout
// from its first byte, however often its bytes come.
func TestLaneHeadTimeout(t *testing.T) {
	l := newLane(t, nil, func(s *http.Server) { s.ReadHeaderTimeout = 300 * time.Millisecond })
	c, br := l.conn(t)
	io.WriteString(c, get("/k/a"))
	read(t, br, "GET")
	start := time.Now()
	closed := make(chan error, 1)
	go func() {
		_, err := br.ReadByte()
		closed <- err
	}()
	for _, b := range []byte("GET /k/a HTTP/1.1\r\nX-Slow: " + strings.Repeat("v", 60)) {
		select {
		case <-closed:
			if took := time.Since(start); took > 2*time.Second {
				t.Fatalf("cut after %s; the header timeout is 300ms", took)
			}
			return
		case <-time.After(100 * time.Millisecond):
		}
		if _, err := c.Write([]byte{b}); err != nil {
			return // cut
		}
	}
	t.Fatalf("a head trickling in for %s was not cut; the header timeout is 300ms", time.Since(start))
}
