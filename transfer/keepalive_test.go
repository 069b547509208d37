package transfer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"largo/internal/poll"
)

// counting is a wrapper outside the Response, as a metrics or logging
// middleware would be: it counts the body bytes that pass through it and
// keeps sendfile alive by passing ReadFrom and Unwrap through.
type counting struct {
	http.ResponseWriter
	n        *atomic.Int64
	readFrom *atomic.Int64 // the bytes that came by ReadFrom
}

func (c counting) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func (c counting) ReadFrom(src io.Reader) (int64, error) {
	n, err := c.ResponseWriter.(io.ReaderFrom).ReadFrom(src)
	c.n.Add(n)
	c.readFrom.Add(n)
	return n, err
}

func (c counting) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// largeFileServer serves the file at path through a Response behind a
// counting wrapper, with the connection in the requests' context as
// package serve's server keeps it. Each Response is sent on done once its
// handler is finished with it.
func largeFileServer(t *testing.T, path string, outer, readFrom *atomic.Int64, done chan<- *Response) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			t.Error(err)
			return
		}
		r := NewResponse(counting{w, outer, readFrom}, Options{IdleTimeout: time.Minute})
		http.ServeContent(r, req, "", fi.ModTime(), f)
		r.Finish()
		if done != nil {
			done <- r
		}
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

// TestLargeBodyKeepsConnection checks that large file bodies, whole and as
// a range, leave through net/http on one kept-alive connection, that a
// wrapper outside the Response counts every byte of them (and receives
// them by ReadFrom, the sendfile path), and that the Response counts
// them too and calls them complete.
func TestLargeBodyKeepsConnection(t *testing.T) {
	const size = 20 << 20 // several segments
	path, data := writeFile(t, size)
	var outer, readFrom atomic.Int64
	done := make(chan *Response, 3)
	srv := largeFileServer(t, path, &outer, &readFrom, done)

	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	var total int64
	for i, tc := range []struct {
		rng    string
		status int
		want   []byte
	}{
		{"", http.StatusOK, data},
		{"bytes=1000-", http.StatusPartialContent, data[1000:]},
		{"", http.StatusOK, data},
	} {
		req := "GET /f HTTP/1.1\r\nHost: x\r\n"
		if tc.rng != "" {
			req += "Range: " + tc.rng + "\r\n"
		}
		if _, err := io.WriteString(c, req+"\r\n"); err != nil {
			t.Fatalf("request %d on the same connection: %v", i+1, err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d on the same connection: %v", i+1, err)
		}
		if err := sameBody(resp, tc.want); err != nil || resp.StatusCode != tc.status {
			t.Fatalf("request %d: %d, %v", i+1, resp.StatusCode, err)
		}
		if resp.Close {
			t.Errorf("request %d: the answer says Connection: close", i+1)
		}
		r := <-done
		if r.Written() != int64(len(tc.want)) || r.Outcome("GET") != Complete {
			t.Errorf("request %d: the Response counted %d of %d bytes, outcome %s", i+1, r.Written(), len(tc.want), r.Outcome("GET"))
		}
		total += int64(len(tc.want))
	}
	if outer.Load() != total || readFrom.Load() != total {
		t.Errorf("the outer wrapper counted %d bytes, %d of them by ReadFrom; sent %d", outer.Load(), readFrom.Load(), total)
	}
}

// TestStalledDownloadsWaitInSendfile checks that the large file bodies of
// clients that stop reading wait in the kernel's sendfile under net/http's
// ReadFrom (no body byte copied through user space), and that every byte
// still arrives once the clients read again.
func TestStalledDownloadsWaitInSendfile(t *testing.T) {
	const clients, size = 3, 24 << 20 // more than the sockets' buffers hold
	path, data := writeFile(t, size)
	var outer, readFrom atomic.Int64
	srv := largeFileServer(t, path, &outer, &readFrom, nil)

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
	poll.Wait(t, 10*time.Second, fmt.Sprintf("%d stalled downloads waiting in sendfile under net/http's ReadFrom", clients), func() bool {
		return stacks("net/http.(*response).ReadFrom", "internal/poll.SendFile") == clients
	})
	for _, c := range conns {
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameBody(resp, data); err != nil || resp.Close {
			t.Fatalf("close %v, %v", resp.Close, err)
		}
	}
	if want := int64(clients * size); readFrom.Load() != want {
		t.Errorf("the outer wrapper got %d bytes by ReadFrom; want %d", readFrom.Load(), want)
	}
}

// sameBody reads resp's body and says how it differs from want.
func sameBody(resp *http.Response, want []byte) error {
	defer resp.Body.Close()
	got := make([]byte, len(want)+1)
	n, err := io.ReadFull(resp.Body, got)
	if err != io.ErrUnexpectedEOF || n != len(want) {
		return fmt.Errorf("body of %d bytes or more, want %d: %v", n, len(want), err)
	}
	if !bytes.Equal(got[:n], want) {
		return errors.New("body differs")
	}
	return nil
}

// stacks counts the goroutines whose stack holds every one of fns.
func stacks(fns ...string) int {
	var b strings.Builder
	pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		all := true
		for _, fn := range fns {
			all = all && strings.Contains(g, fn)
		}
		if all {
			n++
		}
	}
	return n
}
