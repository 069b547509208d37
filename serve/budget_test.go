package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"largo/internal/poll"
	"largo/internal/unread"
	"largo/links"
)

// unreadWriter is a client that never reads its answer: a write of a 200
// waits until release is closed, as a write into a full socket waits for
// its deadline. An answer of another status is taken at once. settled is
// closed once the request holds what it holds: it waits in a write, or
// its handler returned.
type unreadWriter struct {
	hdr     http.Header
	code    atomic.Int32
	release <-chan struct{}
	settled chan struct{}
	once    sync.Once
}

func newUnreadWriter(release <-chan struct{}) *unreadWriter {
	return &unreadWriter{hdr: http.Header{}, release: release, settled: make(chan struct{})}
}

func (w *unreadWriter) Header() http.Header { return w.hdr }

func (w *unreadWriter) WriteHeader(code int) {
	if w.code.Load() == 0 {
		w.code.Store(int32(code))
	}
}

func (w *unreadWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.code.Load() != http.StatusOK {
		return len(p), nil
	}
	w.settle()
	<-w.release
	return 0, io.ErrClosedPipe
}

func (w *unreadWriter) settle() { w.once.Do(func() { close(w.settled) }) }

// TestUnreadSearchesShareTheBudget: 32 searches of one client (two
// addresses of one IPv6 /64) whose answers are never read hold at most
// the client's share of the listings' budget, and are refused 503 with a
// Retry-After past it; a listing of another client still answers 200.
func TestUnreadSearchesShareTheBudget(t *testing.T) {
	h, _ := newTestHandler(t, map[string]string{"d/x.txt": "x", "d/y.txt": "y"})
	budget := h.cfg.Listing.Budget
	release := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(release)
		wg.Wait()
		if n := budget.InUse(); n != 0 {
			t.Errorf("%d bytes of the budget held once the searches ended", n)
		}
	}()
	held, refused := 0, 0
	for i := range 32 {
		req := httptest.NewRequest("GET", SearchPath+"?path=/&q=x", nil)
		req.RemoteAddr = fmt.Sprintf("[2001:db8:1:2::%x]:4000", 10+i%2)
		w := newUnreadWriter(release)
		wg.Go(func() {
			h.ServeHTTP(w, req)
			w.settle()
		})
		<-w.settled
		switch code := w.code.Load(); code {
		case http.StatusOK:
			held++
		case http.StatusServiceUnavailable:
			refused++
			if w.hdr.Get("Retry-After") == "" {
				t.Error("a search refused for want of memory has no Retry-After")
			}
		default:
			t.Fatalf("search %d: %d", i, code)
		}
	}
	share := budget.Share() / searchMemory
	if held != int(share) || refused != 32-held {
		t.Errorf("%d searches held, %d refused; want the client's share, %d, held and the rest refused", held, refused, share)
	}
	if got := budget.Held("2001:db8:1:2::/64"); got > budget.Share() {
		t.Errorf("the /64 holds %d bytes, past its share of %d", got, budget.Share())
	}
	other := do(h, "GET", "/d/", "Accept", "application/json")
	if other.Code != http.StatusOK || !strings.Contains(other.Body.String(), "x.txt") {
		t.Errorf("another client's listing beside the unread searches: %d %s", other.Code, other.Body)
	}
	same := httptest.NewRequest("GET", "/d/", nil)
	same.RemoteAddr = "[2001:db8:1:2::99]:4000"
	same.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, same)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a listing of the same /64 past its share: %d, Retry-After %q; want 503 with one", rec.Code, rec.Header().Get("Retry-After"))
	}
}

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
	h, _ := newTestHandler(t, files)
	h.cfg.IdleTimeout = 300 * time.Millisecond
	budget := h.cfg.Listing.Budget
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = smallSendBuffers{srv.Listener}
	srv.Start()
	defer srv.Close()
	for _, tt := range []struct {
		name, req, end string
	}{
		{"search", "GET " + SearchPath + "?path=/&q=n&limit=10000 HTTP/1.1\r\nHost: x\r\n\r\n", `"done":true`},
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
