package transfer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// recorder is a ResponseWriter that records what ReadFrom is handed.
type recorder struct {
	httptest.ResponseRecorder
	sources []io.Reader
}

func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	r.sources = append(r.sources, src)
	return io.Copy(&r.ResponseRecorder, src)
}

func tempFile(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// TestReadFromKeepsFile checks that a file reaches the underlying ReadFrom
// as an *os.File behind a LimitedReader (what sendfile needs), in segments,
// and that every byte arrives.
func TestReadFromKeepsFile(t *testing.T) {
	f, data := tempFile(t, 10<<20+123)
	rec := &recorder{ResponseRecorder: *httptest.NewRecorder()}
	var sent int64
	r := NewResponse(rec, Options{Sent: func(n int64) { sent += n }})
	lr := &io.LimitedReader{R: f, N: int64(len(data)) - 100}
	n, err := io.Copy(r, lr)
	if err != nil || n != int64(len(data))-100 {
		t.Fatalf("copied %d, %v", n, err)
	}
	if lr.N != 0 {
		t.Errorf("LimitedReader left with N=%d", lr.N)
	}
	if !bytes.Equal(rec.Body.Bytes(), data[:len(data)-100]) {
		t.Fatal("body differs")
	}
	if len(rec.sources) != 3 {
		t.Errorf("%d segments; want 3 of at most %d bytes", len(rec.sources), segment)
	}
	for _, src := range rec.sources {
		l, ok := src.(*io.LimitedReader)
		if !ok {
			t.Fatalf("segment source %T; want *io.LimitedReader", src)
		}
		if _, ok := l.R.(*os.File); !ok {
			t.Fatalf("segment reads %T; want *os.File", l.R)
		}
	}
	if sent != n || r.Written() != n || r.Outcome("GET") != Complete {
		t.Errorf("sent %d, written %d, outcome %s", sent, r.Written(), r.Outcome("GET"))
	}
}

// TestReadFromOtherSource checks the buffered path for sources that are
// not files.
func TestReadFromOtherSource(t *testing.T) {
	rec := &recorder{ResponseRecorder: *httptest.NewRecorder()}
	r := NewResponse(rec, Options{})
	body := strings.Repeat("x", 100000)
	n, err := io.Copy(r, strings.NewReader(body))
	if err != nil || n != int64(len(body)) || rec.Body.String() != body {
		t.Fatalf("copied %d, %v", n, err)
	}
	if len(rec.sources) != 0 {
		t.Errorf("underlying ReadFrom called for a non-file source")
	}
}

func TestShortBodyIsError(t *testing.T) {
	rec := httptest.NewRecorder()
	r := NewResponse(rec, Options{})
	r.Header().Set("Content-Length", "10")
	r.WriteHeader(200)
	r.Write([]byte("12345"))
	if o := r.Outcome("GET"); o != Error {
		t.Errorf("outcome %s; want error", o)
	}
	if o := r.Outcome("HEAD"); o != Complete {
		t.Errorf("HEAD outcome %s; want complete", o)
	}
}

// serveFile starts a real server that sends f through a Response and
// reports the outcome.
func serveFile(t *testing.T, f *os.File, opt Options) (string, <-chan *Response) {
	t.Helper()
	done := make(chan *Response, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := NewResponse(w, opt)
		f.Seek(0, io.SeekStart)
		fi, _ := f.Stat()
		http.ServeContent(r, req, "f", fi.ModTime(), f)
		r.Finish()
		done <- r
	}))
	// A small send buffer makes the kernel report progress often, as
	// it does on a real network where the buffer matches the path.
	srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		c.(*net.TCPConn).SetWriteBuffer(64 << 10)
		return ctx
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), done
}

// dial sends a GET and returns the connection with its receive buffer
// made small, so that the server feels the client's pace.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	return c
}

func TestStalledClientIsCut(t *testing.T) {
	f, _ := tempFile(t, 64<<20)
	addr, done := serveFile(t, f, Options{IdleTimeout: 300 * time.Millisecond})
	dial(t, addr) // never reads
	select {
	case r := <-done:
		if o := r.Outcome("GET"); o != Timeout {
			t.Fatalf("outcome %s (%v); want timeout", o, r.Err())
		}
		if r.Written() >= 64<<20 {
			t.Fatalf("all bytes written to a client that never read")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stalled client not cut after 10s")
	}
}

// TestSlowClientIsNotCut reads at a steady pace for which one 4 MiB segment
// takes longer than the idle timeout: the watchdog must keep extending the
// deadline. The timeout leaves the client room for the pauses a loaded
// machine imposes on it.
func TestSlowClientIsNotCut(t *testing.T) {
	f, data := tempFile(t, 8<<20)
	addr, done := serveFile(t, f, Options{IdleTimeout: 2 * time.Second})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, err := io.ReadFull(resp.Body, buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
		time.Sleep(25 * time.Millisecond) // at most 1.3 MB/s: 3.2 s a segment
	}
	r := <-done
	if o := r.Outcome("GET"); o != Complete || !bytes.Equal(got.Bytes(), data) {
		t.Fatalf("outcome %s (%v), received %d of %d bytes", o, r.Err(), got.Len(), len(data))
	}
}

func TestMinRate(t *testing.T) {
	f, _ := tempFile(t, 64<<20)
	addr, done := serveFile(t, f, Options{IdleTimeout: 500 * time.Millisecond, MinRate: 50 << 20})
	c := dial(t, addr)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond) // about 3 MB/s, far below 50 MiB/s
		}
	}()
	select {
	case r := <-done:
		if r.Outcome("GET") != Timeout {
			t.Fatalf("outcome %s (%v); want timeout", r.Outcome("GET"), r.Err())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("slow client not cut")
	}
}

func TestAbortedClient(t *testing.T) {
	f, _ := tempFile(t, 64<<20)
	addr, done := serveFile(t, f, Options{IdleTimeout: 10 * time.Second})
	c := dial(t, addr)
	io.ReadFull(c, make([]byte, 1<<20))
	c.(*net.TCPConn).SetLinger(0)
	c.Close()
	select {
	case r := <-done:
		if o := r.Outcome("GET"); o != Aborted {
			t.Fatalf("outcome %s (%v); want aborted", o, r.Err())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("abort not noticed")
	}
}

func TestClassify(t *testing.T) {
	for err, want := range map[error]Outcome{
		nil:                              Complete,
		ErrTooSlow:                       Timeout,
		os.ErrDeadlineExceeded:           Timeout,
		syscall.EPIPE:                    Aborted,
		syscall.ECONNRESET:               Aborted,
		&net.OpError{Err: syscall.EPIPE}: Aborted,
	} {
		if got := Classify(err); got != want {
			t.Errorf("Classify(%v) = %s, want %s", err, got, want)
		}
	}
}
