package serve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"largo/limit"
)

// searchLines runs a search as user and returns its matches (by name)
// and its last line.
func searchLines(t *testing.T, f *accessFixture, user string, q url.Values) ([]string, searchEnd) {
	t.Helper()
	rec := f.req("GET", SearchPath+"?"+q.Encode(), user)
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
		if rec := f.req("GET", SearchPath+"?"+tt.query, tt.user); rec.Code != tt.code {
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
	h, _ := newTestHandler(t, files)
	f := &accessFixture{h: h}
	names, end := searchLines(t, f, "", url.Values{"path": {"/"}, "q": {"f"}, "limit": {"7"}})
	if len(names) != 7 || !end.More || end.Matches != 7 {
		t.Errorf("limit 7: %d matches, %+v", len(names), end)
	}
	_, end = searchLines(t, f, "", url.Values{"path": {"/"}})
	if end.Files != 30 || end.Folders != 3 || end.Bytes != 30 || end.Matches != 0 {
		t.Errorf("count: %+v", end)
	}
	if n := h.cfg.Listing.Budget.InUse(); n != 0 {
		t.Errorf("%d bytes of the budget kept after the searches", n)
	}
	h.cfg.Listing.Budget = limit.NewBudget(searchMemory-1, 0)
	if rec := f.req("GET", SearchPath+"?path=/&q=f", ""); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("a search without memory: %d %v", rec.Code, rec.Header())
	}
}
