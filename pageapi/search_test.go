package pageapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"largo/limit"
)

// searchLines runs a search as user and returns its matches (by name)
// and its last line.
func searchLines(t *testing.T, f *fixture, user string, q url.Values) ([]string, searchEnd) {
	t.Helper()
	rec := f.get(SearchPath+"?"+q.Encode(), user)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("search %s: %d %s", q.Encode(), rec.Code, rec.Body.String())
	}
	var names []string
	var end searchEnd
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		var m struct {
			match
			searchEnd
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		switch {
		case m.Done:
			end = m.searchEnd
		case m.Href != "":
			names = append(names, m.match.Name+" "+m.Href)
		}
	}
	if !end.Done {
		t.Fatalf("search %s: no last line in %q", q.Encode(), rec.Body.String())
	}
	return names, end
}

// TestSearch: names below a folder, as its requester may see them, with
// the counts of what was looked at.
func TestSearch(t *testing.T) {
	f := newAccessFixture(t)
	for _, tt := range []struct {
		user, path, q string
		want          []string
		files         int64
		skipped       int64
	}{
		{"", "/", "A.TXT", []string{"pub/a.txt ./pub/a.txt"}, 2, 1}, // hidden.txt hidden from him, unlisted not listable
		{"", "/", "t.txt", nil, 2, 1},
		{"alice", "/private/", "t", []string{"s.txt ./s.txt", "deep/t.txt ./deep/t.txt"}, 2, 0},
		{"alice", "/private/", "DEEP", []string{"deep ./deep/"}, 2, 0},
		{"alice", "/", "nothing", nil, 6, 0},
		{"bob", "/pub/", "", nil, 3, 0}, // a count: sealed is no file of his
	} {
		names, end := searchLines(t, f, tt.user, url.Values{"path": {tt.path}, "q": {tt.q}})
		slices.Sort(names)
		slices.Sort(tt.want)
		if !slices.Equal(names, tt.want) || end.Files != tt.files || end.Skipped != tt.skipped || end.More || end.Error != "" {
			t.Errorf("%q below %s as %q: %q %+v; want %q, %d files, %d skipped", tt.q, tt.path, tt.user, names, end, tt.want, tt.files, tt.skipped)
		}
	}
	for _, tt := range []struct {
		user, query string
		code        int
	}{
		{"", "path=/private/&q=s", 401},
		{"bob", "path=/private/&q=s", 403},
		{"alice", "path=/nope/&q=s", 404},
		{"alice", "path=/private/s.txt&q=s", 400},
		{"alice", "path=/.largo/&q=s", 400},
		{"alice", "path=/&q=" + strings.Repeat("x", 257), 400},
		{"alice", "path=/&q=x&limit=0", 400},
	} {
		if rec := f.get(SearchPath+"?"+tt.query, tt.user); rec.Code != tt.code {
			t.Errorf("%s as %q: %d %s; want %d", tt.query, tt.user, rec.Code, strings.TrimSpace(rec.Body.String()), tt.code)
		}
	}
}

// TestSearchLimit: past its limit a search stops and says there is more;
// it takes its memory from the listings' budget, and gives it back.
func TestSearchLimit(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("d%d/f%02d.txt", i%3, i)] = "x"
	}
	f := newFixture(t, files, setup{})
	names, end := searchLines(t, f, "", url.Values{"path": {"/"}, "q": {"f"}, "limit": {"7"}})
	if len(names) != 7 || !end.More || end.Matches != 7 {
		t.Errorf("limit 7: %d matches, %+v", len(names), end)
	}
	_, end = searchLines(t, f, "", url.Values{"path": {"/"}})
	if end.Files != 30 || end.Folders != 3 || end.Bytes != 30 || end.Matches != 0 {
		t.Errorf("count: %+v", end)
	}
	if n := f.listing.Budget.InUse(); n != 0 {
		t.Errorf("%d bytes of the budget kept after the searches", n)
	}
	f.api.cfg.Listing.Budget = limit.NewBudget(searchMemory-1, 0)
	if rec := f.get(SearchPath+"?path=/&q=f", ""); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a search without memory: %d %v", rec.Code, rec.Header())
	}
}

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
	f := newFixture(t, map[string]string{"d/x.txt": "x", "d/y.txt": "y"}, setup{})
	budget := f.listing.Budget
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
			f.h.ServeHTTP(w, req)
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
	other := f.get("/d/", "", "Accept", "application/json")
	if other.Code != http.StatusOK || !strings.Contains(other.Body.String(), "x.txt") {
		t.Errorf("another client's listing beside the unread searches: %d %s", other.Code, other.Body)
	}
	same := httptest.NewRequest("GET", "/d/", nil)
	same.RemoteAddr = "[2001:db8:1:2::99]:4000"
	same.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, same)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a listing of the same /64 past its share: %d, Retry-After %q; want 503 with one", rec.Code, rec.Header().Get("Retry-After"))
	}
}
