package gather

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// counting counts the writes that reach the connections it accepts.
type counting struct {
	net.Listener
	writes *atomic.Int64
}

func (l counting) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

type connKey struct{}

// server serves body (4 KiB: with its head, more than net/http's buffer)
// as a kept file is served, holding its writes when hold is set.
func server(t *testing.T, hold, useTLS bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	body := bytes.Repeat([]byte("0123456789abcdef"), 256)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold {
			Hold(r.Context().Value(connKey{}).(net.Conn))
		}
		w.Header().Set("Content-Length", "4096")
		w.Write(body)
	}))
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, connKey{}, c)
	}
	writes := new(atomic.Int64)
	srv.Listener = Listener{counting{srv.Listener, writes}}
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, writes
}

// get asks for the file n times on one connection, one request after the
// other, and checks each answer.
func get(t *testing.T, srv *httptest.Server, n int) {
	t.Helper()
	c := srv.Client()
	if tr, ok := c.Transport.(*http.Transport); ok {
		tr.ForceAttemptHTTP2 = false
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		tr.MaxConnsPerHost = 1
	}
	for range n {
		resp, err := c.Get(srv.URL + "/f")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || len(b) != 4096 || !bytes.HasPrefix(b, []byte("0123")) {
			t.Fatalf("answer of %d bytes, %v", len(b), err)
		}
	}
}

func TestOneWritePerAnswer(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		name := "http"
		if useTLS {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			srv, writes := server(t, false, useTLS)
			get(t, srv, 1) // the connection, and for TLS its handshake
			before := writes.Load()
			get(t, srv, 5)
			unheld := writes.Load() - before

			srv, writes = server(t, true, useTLS)
			get(t, srv, 1)
			before = writes.Load()
			get(t, srv, 5)
			held := writes.Load() - before
			if held != 5 || unheld <= held {
				t.Fatalf("5 answers took %d writes held, %d not; want 5 held, and more without", held, unheld)
			}
		})
	}
}

// Requests sent together (pipelined) each get their answer: what one
// holds leaves before the server reads the next.
func TestPipelinedAnswersLeave(t *testing.T) {
	srv, writes := server(t, true, false)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := "GET /f HTTP/1.1\r\nHost: x\r\n\r\n"
	if _, err := io.WriteString(c, strings.Repeat(req, 3)+"GET /f HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i := range 4 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil || len(b) != 4096 {
			t.Fatalf("answer %d: %d bytes, %v", i, len(b), err)
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the last answer: %v; want the connection closed", err)
	}
	if n := writes.Load(); n != 4 {
		t.Errorf("4 answers took %d writes; want 4", n)
	}
}

// A connection that holds writes them in order around writes it does not
// hold, and sends what it holds when it is closed.
func TestHeldThenUnheldInOrder(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := &Conn{Conn: a}
	got := make(chan []byte)
	go func() {
		all, _ := io.ReadAll(b)
		got <- all
	}()
	Hold(c)
	c.Write([]byte("one "))
	c.Write([]byte("two "))
	c.Write(bytes.Repeat([]byte("x"), MaxHeld)) // past MaxHeld: all out
	Hold(c)
	c.Write([]byte(" three"))
	c.Close()
	want := "one two " + strings.Repeat("x", MaxHeld) + " three"
	if s := string(<-got); s != want {
		t.Fatalf("read %d bytes, not what was written in order", len(s))
	}
}
