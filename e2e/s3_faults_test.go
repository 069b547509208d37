//go:build e2e

package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"largo/s3/s3test"
)

// faultyProxy stands between largo and the S3 server: it can slow every
// read down, and cut every connection at once and refuse new ones, as a
// server that crashed, until it is up again.
type faultyProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	delay time.Duration
	down  bool
	conns map[net.Conn]bool
}

func newFaultyProxy(t *testing.T, target string) *faultyProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultyProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go p.serve()
	return p
}

func (p *faultyProxy) endpoint() string { return "http://" + p.ln.Addr().String() }

func (p *faultyProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c, s)
		go p.pipe(s, c)
		go p.pipe(c, s)
	}
}

func (p *faultyProxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = true
	}
}

// pipe copies src to dst, each read after the proxy's delay.
func (p *faultyProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		d := p.delay
		p.mu.Unlock()
		if d > 0 {
			time.Sleep(d)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cut closes every connection and refuses new ones until up.
func (p *faultyProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *faultyProxy) up() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}

func (p *faultyProxy) slow(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// startLargoVia serves srv's bucket through endpoint.
func startLargoVia(t *testing.T, srv *s3test.Server, endpoint string, args ...string) *server {
	t.Helper()
	args = append([]string{"serve", "--store", "s3://" + srv.Bucket + "/", "--s3-endpoint", endpoint, "--listen", "127.0.0.1:0"}, args...)
	return startLargo(t, args, srv.Env())
}

// TestS3ServerFaults: the S3 server dies in the middle of a download and
// of an upload, and answers slowly. A download is cut cleanly; an upload
// is refused, leaves no object and, once the server is back, no multipart
// upload; largo itself stays up and answers; slow answers only slow it.
func TestS3ServerFaults(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	putRandom(t, srv, "big.bin", 64<<20, 3)
	p := newFaultyProxy(t, srv.Addr)
	s := startLargoVia(t, srv, p.endpoint(), "--upload", "--token", testToken, "--upload-expiry", "2s", "--s3-part-size", "5MiB")

	// The server dies mid-download.
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	fmt.Fprintf(c, "GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET: %v", err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 2<<20)); err != nil {
		t.Fatal(err)
	}
	p.cut()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if n, err := io.Copy(io.Discard, resp.Body); err == nil || 2<<20+n >= 64<<20 {
		t.Errorf("download with the S3 server gone: %d more bytes, %v; want it cut short", n, err)
	}
	if r := get(t, s.URL+"_largo/healthz"); r.StatusCode != 200 {
		t.Errorf("healthz with the S3 server gone: %d", r.StatusCode)
	}
	if r := get(t, s.URL+"big.bin"); r.StatusCode < 500 {
		t.Errorf("a new download with the S3 server gone: %d; want a server error", r.StatusCode)
	}
	p.up()

	// The server dies mid-upload: a chunked body, past its first parts.
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- refusedStatus(t, s, "PUT", s.URL+"up.bin", pr, -1, bearer...)
	}()
	chunk := strings.Repeat("u", 1<<20)
	for i := 0; i < 16; i++ {
		if _, err := io.WriteString(pw, chunk); err != nil {
			break
		}
	}
	if !waitFor(10*time.Second, func() bool { return multipartUploads(t, srv) > 0 }) {
		t.Fatal("the upload never reached the S3 server")
	}
	p.cut()
	go func() {
		for i := 0; i < 16; i++ {
			if _, err := io.WriteString(pw, chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	select {
	case code := <-done:
		if code < 500 {
			t.Errorf("upload with the S3 server gone: %d; want a server error", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the upload hung with the S3 server gone")
	}
	pr.CloseWithError(io.ErrClosedPipe)
	p.up()
	// The sweep aborts the upload, then forgets its record.
	if !waitFor(20*time.Second, func() bool {
		return multipartUploads(t, srv) == 0 && len(srv.Keys(t, srv.Bucket, ".largo/multipart/")) == 0
	}) {
		t.Errorf("multipart uploads left once the server was back: %d", multipartUploads(t, srv))
	}
	if _, ok := srv.Get(t, srv.Bucket, "up.bin"); ok {
		t.Error("an object at up.bin after a failed upload")
	}
	if keys := srv.Keys(t, srv.Bucket, ".largo/multipart/"); len(keys) != 0 {
		t.Errorf("records of multipart uploads left: %v", keys)
	}

	// Slow answers: everything works, later.
	p.slow(5 * time.Millisecond)
	if r := get(t, s.URL+"big.bin", "Range", "bytes=0-4194303"); r.StatusCode != 206 {
		t.Errorf("a slow ranged download: %d", r.StatusCode)
	} else if _, n := bodySHA(t, r.Body); n != 4<<20 {
		t.Errorf("a slow ranged download gave %d bytes", n)
	}
	if r, _ := put(t, s.URL+"slow.bin", strings.NewReader(chunk), int64(len(chunk)), bearer...); r.StatusCode != 201 {
		t.Errorf("a slow upload: %d", r.StatusCode)
	}
}
