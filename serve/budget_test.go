package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/internal/unread"
	"largo/links"
	"largo/pageapi"
)

// smallSendBuffers is a listener whose connections have small send
// buffers, so that a client that does not read blocks the server's
// writes after a few kilobytes.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
	}
	return c, err
}

// TestUnreadAnswersAreCut: a search or a listing whose client stops
// reading is cut by the progress deadline of every transfer (the idle
// timeout), and gives its memory back to the listings' budget.
func TestUnreadAnswersAreCut(t *testing.T) {
	files := map[string]string{}
	long := strings.Repeat("n", 120)
	for i := range 3000 {
		files[fmt.Sprintf("d/%s%04d.txt", long, i)] = ""
	}
	h := newPageHandler(t, files)
	h.cfg.IdleTimeout = 300 * time.Millisecond
	budget := h.cfg.Listing.Budget
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Start()
	defer srv.Close()
	for _, tt := range []struct {
		name, req, end string
	}{
		{"search", "GET " + pageapi.SearchPath + "?path=/&q=n&limit=10000 HTTP/1.1\r\nHost: x\r\n\r\n", `"done":true`},
		{"listing", "GET /d/ HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n", "]}"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := unread.Dial(t, srv.Listener.Addr().String())
			io.WriteString(c, tt.req)
			poll.Wait(t, 10*time.Second, "the answer to take memory", func() bool { return budget.InUse() > 0 })
			poll.Wait(t, 10*time.Second, "the unread answer to be cut and its memory given back", func() bool { return budget.InUse() == 0 })
			// What the client can still read ends short of the answer's end.
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			b, err := io.ReadAll(bufio.NewReader(c))
			if err != nil {
				t.Fatalf("reading what was sent: %v", err)
			}
			if strings.Contains(string(b), tt.end) {
				t.Errorf("the whole answer (%d bytes) was sent to a client that did not read", len(b))
			}
		})
	}
}

// TestLinkPasswordFromManyAddresses: a share link's password guessed
// once from each of many addresses hits the link's own budget of
// failures (429), whatever address tries next; another link is not
// touched, and the link's tries come back with time.
func TestLinkPasswordFromManyAddresses(t *testing.T) {
	f := newAccessFixture(t)
	exp := f.now.Add(time.Hour)
	pw := f.link(t, links.Link{Kind: links.Folder, Path: "private", Maker: "alice", Expires: exp}, "open sesame")
	other := f.link(t, links.Link{Kind: links.Folder, Path: "private", Maker: "alice", Expires: exp}, "other secret")
	try := func(path, remote, password string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr, req.Host = remote, "127.0.0.1"
		req.SetBasicAuth("x", password)
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		return rec
	}
	codes := map[int]int{}
	for i := range 40 {
		codes[try(pw+"s.txt", fmt.Sprintf("198.51.100.%d:1000", i+1), fmt.Sprintf("guess %d", i)).Code]++
	}
	if codes[http.StatusForbidden] != 10 || codes[http.StatusTooManyRequests] != 30 {
		t.Errorf("40 guesses from 40 addresses: %v; want 10 wrong (403) and the rest refused (429)", codes)
	}
	rec := try(pw+"s.txt", "203.0.113.1:1000", "open sesame")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("the right password while the link's budget is spent: %d, Retry-After %q; want 429 with one", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := try(other+"s.txt", "203.0.113.2:1000", "other secret"); rec.Code != http.StatusOK {
		t.Errorf("another link's password: %d", rec.Code)
	}
	f.now = f.now.Add(2 * time.Second)
	if rec := try(pw+"s.txt", "203.0.113.1:1000", "open sesame"); rec.Code != http.StatusOK {
		t.Errorf("the right password once a try is back: %d", rec.Code)
	}
}
