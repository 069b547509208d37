package lab

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The shaper's figures are checked one way only: a path is never faster
// than it is told (a request takes its round trip, a stream stays below
// its cap), which no load on the machine can break; how close to the cap
// it comes is the lab's to report.

// shapedServer serves content at /f and echoes a PUT's body, behind a
// shaper over p; it returns the shaper's base URL and a client of its
// own.
func shapedServer(t *testing.T, content []byte, p shapedPath) (string, *http.Client) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /f", func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "f.bin", time.Time{}, bytes.NewReader(content))
	})
	mux.HandleFunc("PUT /echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Write(b)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	sh, err := startShaper(srv.Listener.Addr().String(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.close)
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return "http://" + sh.addr() + "/", &http.Client{Transport: tr, Timeout: time.Minute}
}

// timedGet fetches url and returns its body and how long it took.
func timedGet(t *testing.T, cl *http.Client, url string) ([]byte, time.Duration) {
	t.Helper()
	start := time.Now()
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", url, resp.Status, err)
	}
	return b, time.Since(start)
}

// TestShaperDelay: over a 150 ms round trip, a request on a new
// connection takes its handshake and its own round trip, one on a kept
// connection at least the round trip, and the bytes arrive intact.
func TestShaperDelay(t *testing.T) {
	t.Parallel()
	const rtt = 150 * time.Millisecond
	content := []byte("a small answer from far away\n")
	base, cl := shapedServer(t, content, shapedPath{RTT: rtt})
	b, took := timedGet(t, cl, base+"f")
	if !bytes.Equal(b, content) {
		t.Fatalf("body %q", b)
	}
	t.Logf("a request on a new connection: %s", took)
	if took < 2*rtt {
		t.Errorf("a request on a new connection took %s; want at least two round trips, %s", took, 2*rtt)
	}
	b, took = timedGet(t, cl, base+"f")
	if !bytes.Equal(b, content) {
		t.Fatalf("body %q", b)
	}
	t.Logf("a request on a kept connection: %s", took)
	if took < rtt {
		t.Errorf("a request on a kept connection took %s; want at least the round trip, %s", took, rtt)
	}
}

// TestShaperRate: under a cap of 4 MB/s each way, a 2 MB download and a
// 1 MB upload each stay below twice the cap, and arrive intact.
func TestShaperRate(t *testing.T) {
	t.Parallel()
	const rate = 4e6
	content := make([]byte, 2e6)
	x := xorshift(7)
	x.Read(content)
	base, cl := shapedServer(t, content, shapedPath{RTT: 10 * time.Millisecond, Rate: rate})
	b, took := timedGet(t, cl, base+"f")
	if !bytes.Equal(b, content) {
		t.Fatal("the download through the shaper differs from the file")
	}
	t.Logf("download: %d bytes in %s", len(b), took)
	if got := float64(len(b)) / took.Seconds(); got > 2*rate {
		t.Errorf("download at %.1f MB/s under a cap of %.1f MB/s", got/1e6, rate/1e6)
	}

	up := content[:1e6]
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPut, base+"echo", bytes.NewReader(up))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took = time.Since(start)
	if err != nil || !bytes.Equal(back, up) {
		t.Fatalf("the echoed upload differs (%d of %d bytes, %v)", len(back), len(up), err)
	}
	t.Logf("upload and echo: %d bytes each way in %s", len(up), took)
	// The body went up and came back, each way under the cap.
	if got := float64(len(up)) / took.Seconds(); got > 2*rate {
		t.Errorf("upload at %.1f MB/s under a cap of %.1f MB/s", got/1e6, rate/1e6)
	}
}

// TestShaperWindow: with a window of 128 KiB and a 100 ms round trip,
// and no cap, a stream moves at most a window per round trip (1.3 MB/s):
// a 600 kB download stays below twice that.
func TestShaperWindow(t *testing.T) {
	t.Parallel()
	const window, rtt = 128 << 10, 100 * time.Millisecond
	content := make([]byte, 6e5)
	x := xorshift(9)
	x.Read(content)
	base, cl := shapedServer(t, content, shapedPath{RTT: rtt, Window: window})
	b, took := timedGet(t, cl, base+"f")
	if !bytes.Equal(b, content) {
		t.Fatal("the download through the shaper differs from the file")
	}
	t.Logf("download: %d bytes in %s", len(b), took)
	limit := float64(window) / rtt.Seconds()
	if got := float64(len(b)) / took.Seconds(); got > 2*limit {
		t.Errorf("download at %.2f MB/s with a window of %.2f MB/s", got/1e6, limit/1e6)
	}
}

// TestShaperClose: closing the shaper cuts a transfer under way and
// returns; a shaper refuses a negative path.
func TestShaperClose(t *testing.T) {
	t.Parallel()
	// A peer that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	sh, err := startShaper(ln.Addr().String(), shapedPath{RTT: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", sh.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	sh.close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("after close the client read %d bytes, %v; want the connection cut", n, err)
	}
	if _, err := startShaper(ln.Addr().String(), shapedPath{Rate: -1}); err == nil {
		t.Error("a negative rate was taken")
	}
}
