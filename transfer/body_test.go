package transfer

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// bodyResult is what the server saw of an upload.
type bodyResult struct {
	n       int64
	err     error
	outcome Outcome
	took    time.Duration
}

// serveBody starts a real server whose handler reads the request body
// through a Body and reports what happened.
func serveBody(t *testing.T, opt BodyOptions) (string, <-chan bodyResult) {
	t.Helper()
	done := make(chan bodyResult, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		b := NewBody(w, r.Body, opt)
		n, err := io.Copy(io.Discard, b)
		b.Close()
		if n != b.BytesRead() {
			t.Errorf("copied %d, BytesRead %d", n, b.BytesRead())
		}
		done <- bodyResult{n, err, b.Outcome(), time.Since(start)}
		fmt.Fprint(w, n)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), done
}

func TestBodyComplete(t *testing.T) {
	var received int64
	addr, done := serveBody(t, BodyOptions{IdleTimeout: time.Second, Received: func(n int64) { received += n }})
	resp, err := http.Post("http://"+addr+"/", "application/octet-stream", bytes.NewReader(make([]byte, 5<<20)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := <-done
	if r.err != nil || r.n != 5<<20 || r.outcome != Complete || received != 5<<20 {
		t.Fatalf("%+v, received %d", r, received)
	}
}

func TestBodyStalledUploaderIsCut(t *testing.T) {
	addr, done := serveBody(t, BodyOptions{IdleTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n%s", strings.Repeat("x", 1000))
	select {
	case r := <-done:
		if r.outcome != Timeout || r.n != 1000 {
			t.Fatalf("%+v; want a timeout after 1000 bytes", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stalled uploader not cut")
	}
}

// TestBodySlowUploaderIsNotCut sends for several idle timeouts at a steady
// trickle: the deadline must move with each arrival.
func TestBodySlowUploaderIsNotCut(t *testing.T) {
	addr, done := serveBody(t, BodyOptions{IdleTimeout: 400 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 20000\r\n\r\n")
	for range 20 {
		time.Sleep(100 * time.Millisecond)
		c.Write(bytes.Repeat([]byte("y"), 1000))
	}
	r := <-done
	if r.outcome != Complete || r.n != 20000 || r.took < time.Second {
		t.Fatalf("%+v", r)
	}
}

func TestBodyAbortedUploader(t *testing.T) {
	addr, done := serveBody(t, BodyOptions{IdleTimeout: 10 * time.Second})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n%s", strings.Repeat("z", 5000))
	time.Sleep(100 * time.Millisecond)
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	select {
	case r := <-done:
		if r.outcome != Aborted || r.err == nil {
			t.Fatalf("%+v; want aborted", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("abort not noticed")
	}
}

func TestBodyMinRate(t *testing.T) {
	addr, done := serveBody(t, BodyOptions{IdleTimeout: 300 * time.Millisecond, MinRate: 1 << 20})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
	go func() {
		for range 100 {
			if _, err := c.Write([]byte("slow")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	select {
	case r := <-done:
		if r.outcome != Timeout {
			t.Fatalf("%+v; want timeout", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("slow uploader not cut")
	}
}

func TestBodyOverLimitIsRejected(t *testing.T) {
	b := NewBody(httptest.NewRecorder(), http.MaxBytesReader(nil, io.NopCloser(strings.NewReader("0123456789")), 5), BodyOptions{})
	if _, err := io.Copy(io.Discard, b); err == nil || b.Outcome() != Rejected {
		t.Fatalf("%v, %s", err, b.Outcome())
	}
}
