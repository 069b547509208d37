package transfer

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"
)

// fileServer serves the file at path with a Response that knows its
// connection, as package serve makes them.
func fileServer(t *testing.T, path string) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		fi, _ := f.Stat()
		r := NewResponse(w, Options{IdleTimeout: time.Minute})
		r.SendFilesBy(ConnOf(req.Context()))
		http.ServeContent(r, req, "", fi.ModTime(), f)
		r.Finish()
	}))
	srv.Config.ConnContext = ConnContext
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

func writeFile(t *testing.T, size int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestLargeBodyLeavesByTheConnection checks that HTTP/1 downloads of large
// files whose clients stop reading wait in the connection's own sendfile,
// not in net/http's ReadFrom (which holds a 32 KiB buffer for as long as
// it runs), that their answers say Connection: close, and that every byte
// still arrives once the clients read again.
func TestLargeBodyLeavesByTheConnection(t *testing.T) {
	const clients, size = 8, 32 << 20
	path, data := writeFile(t, size)
	srv := fileServer(t, path)

	var conns []net.Conn
	for range clients {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
		conns = append(conns, c)
	}
	var direct, viaNetHTTP int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		viaNetHTTP = stacks("net/http.(*response).ReadFrom")
		direct = stacks("net.(*TCPConn).ReadFrom") - viaNetHTTP
		if direct == clients {
			break
		}
	}
	if direct != clients || viaNetHTTP != 0 {
		t.Fatalf("of %d stalled downloads, %d wait in the connection's own ReadFrom and %d in net/http's", clients, direct, viaNetHTTP)
	}
	for _, c := range conns {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("body of %d bytes, %v", len(got), err)
		}
		if !resp.Close {
			t.Error("the answer does not say Connection: close")
		}
	}
}

// TestLargeRangeLeavesByTheConnection checks a 206 answer of the same
// kind: the range's bytes, whole, and the connection closed after them.
func TestLargeRangeLeavesByTheConnection(t *testing.T) {
	path, data := writeFile(t, 40<<20)
	srv := fileServer(t, path)
	req, _ := http.NewRequest("GET", srv.URL+"/f", nil)
	req.Header.Set("Range", "bytes=1000-")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusPartialContent || !bytes.Equal(got, data[1000:]) {
		t.Fatalf("%d: %d bytes, %v", resp.StatusCode, len(got), err)
	}
	if !resp.Close {
		t.Error("the answer does not say Connection: close")
	}
}

// TestSmallBodyKeepsConnection checks that a body under directBody goes
// through net/http and keeps its connection alive.
func TestSmallBodyKeepsConnection(t *testing.T) {
	path, data := writeFile(t, 1<<20)
	srv := fileServer(t, path)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 2 {
		fmt.Fprintf(c, "GET /f HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil || !bytes.Equal(got, data) || resp.Close {
			t.Fatalf("request %d: %d bytes, close %v, %v", i+1, len(got), resp.Close, err)
		}
	}
}

// wrapped gives up its connection through NetConn and passes ReadFrom
// through, as package limit's connections do.
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }
func (w wrapped) ReadFrom(r io.Reader) (int64, error) {
	return w.Conn.(io.ReaderFrom).ReadFrom(r)
}

func TestSendfileConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	for _, tc := range []struct {
		name string
		c    net.Conn
		want bool
	}{
		{"TCP", c, true},
		{"TCP behind a wrapper", wrapped{c}, true},
		{"TLS over TCP", tls.Client(c, &tls.Config{}), false},
		{"a pipe", a, false},
		{"nothing", nil, false},
	} {
		if got := sendfileConn(tc.c) != nil; got != tc.want {
			t.Errorf("%s: sends itself %v, want %v", tc.name, got, tc.want)
		}
	}
}

// stacks counts the goroutines whose stack holds fn.
func stacks(fn string) int {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}
