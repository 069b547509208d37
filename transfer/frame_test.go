package transfer

import (
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// sizes records the size of every write to the connections a listener
// accepts.
type sizes struct {
	net.Listener
	mu     sync.Mutex
	writes []int
}

func (s *sizes) Accept() (net.Conn, error) {
	c, err := s.Listener.Accept()
	return &sizedConn{Conn: c, s: s}, err
}

type sizedConn struct {
	net.Conn
	s *sizes
}

func (c *sizedConn) Write(p []byte) (int, error) {
	c.s.mu.Lock()
	c.s.writes = append(c.s.writes, len(p))
	c.s.mu.Unlock()
	return c.Conn.Write(p)
}

// TestHTTP2FramesFillRecords checks that a file sent over HTTP/2 and TLS
// leaves in whole TLS records, one per DATA frame: a full 16 KiB frame is
// 9 bytes longer than a record's plaintext, and TLS would send each one as
// a full record and a 9-byte one, each in its own write.
func TestHTTP2FramesFillRecords(t *testing.T) {
	f, data := tempFile(t, 4<<20)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r := NewResponse(w, Options{})
		if _, err := io.Copy(r, f); err != nil {
			t.Error(err)
		}
	}))
	srv.EnableHTTP2 = true
	ln := &sizes{Listener: srv.Listener}
	srv.Listener = ln
	srv.StartTLS()
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.ProtoMajor != 2 {
		t.Fatalf("HTTP/%d, %v", resp.ProtoMajor, err)
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatal("body differs")
	}
	ln.mu.Lock()
	defer ln.mu.Unlock()
	var tiny, full int
	for _, n := range ln.writes {
		switch {
		case n < 64:
			tiny++
		case n >= 16<<10:
			full++
		}
	}
	// 4 MiB is 256 frames; TLS sends the first 128 KiB in small records
	// whatever the frames, and the handshake and settings are a few
	// short writes.
	if full < 200 || tiny > 20 {
		t.Errorf("%d writes: %d of a full record, %d of under 64 bytes; want whole records", len(ln.writes), full, tiny)
	}
}
