package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"largo/disk"
	"largo/limit"
	"largo/listing"
	"largo/ui"
)

// hugeFolder makes a folder of n empty files (and a few folders, and
// sidecars of the files large enough to have them), and returns it with
// the names the listing shows, in the JSON order.
func hugeFolder(t *testing.T, n int) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var dirs, files []string
	for i := range n {
		name := fmt.Sprintf("f%d.txt", i)
		var content []byte
		if i%1000 == 0 { // text worth compressing, and its sidecar
			content = bytes.Repeat([]byte("text "), 300)
			if err := os.WriteFile(filepath.Join(dir, name+".gz"), []byte("gz"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if i%5000 == 0 {
			d := fmt.Sprintf("d%d", i)
			os.Mkdir(filepath.Join(dir, d), 0o755)
			dirs = append(dirs, d)
		}
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	slices.Sort(dirs)
	slices.Sort(files)
	return dir, append(dirs, files...)
}

// TestListingBounded lists a folder of 20,000 entries with a memory per
// listing far below what it takes, so that it spills and merges: both
// listings come back complete, sorted and without sidecars, and a
// listing that finds the shared budget taken is answered 503 with a
// Retry-After instead of growing.
func TestListingBounded(t *testing.T) {
	dir, want := hugeFolder(t, 20_000)
	s, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	budget := limit.NewBudget(4<<20, 0)
	spill := t.TempDir()
	h := New(Config{Store: s, Listing: listing.Config{Budget: budget, Max: 256 << 10, Dir: spill}})
	for i := 0; i < 20_000; i += 1000 {
		recordSidecars(t, h, fmt.Sprintf("f%d.txt.gz", i))
	}

	rec := do(h, "GET", "/", "Accept", "application/json")
	var l Listing
	if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || rec.Code != 200 {
		t.Fatalf("JSON listing: %d, %v", rec.Code, err)
	}
	var got []string
	for _, e := range l.Entries {
		got = append(got, e.Name)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("JSON listing: %d entries, first %q; want %d, first %q", len(got), got[:3], len(want), want[:3])
	}

	page := do(h, "GET", "/").Body.String()
	rows := regexp.MustCompile(`<tr data-name="([^"]*)"`).FindAllStringSubmatch(page, -1)
	natural := slices.Clone(want)
	slices.SortStableFunc(natural, func(a, b string) int {
		return ui.View{}.Compare(ui.Entry{Name: a, Dir: a[0] == 'd'}, ui.Entry{Name: b, Dir: b[0] == 'd'})
	})
	got = got[:0]
	for _, m := range rows {
		got = append(got, m[1])
	}
	if !slices.Equal(got, natural) {
		t.Fatalf("page: %d rows, first %q; want %d, first %q", len(got), got[:min(5, len(got))], len(natural), natural[:5])
	}
	if !strings.Contains(page, ">4 folders, 20000 files, 29.3 KiB<") {
		t.Errorf("page summary: %s", regexp.MustCompile(`id="summary"[^<]*`).FindString(page))
	}
	filtered := doQuery(h, "/", "q=f19999&sort=size").Body.String()
	if n := strings.Count(filtered, "<tr data-name="); n != 1 || !strings.Contains(filtered, "(1 of 20004 shown)") {
		t.Errorf("filtered page: %d rows, summary %s", n, regexp.MustCompile(`id="summary"[^<]*`).FindString(filtered))
	}
	if budget.InUse() != 0 {
		t.Errorf("%d bytes of the budget still held", budget.InUse())
	}
	if ents, _ := os.ReadDir(spill); len(ents) != 0 {
		t.Errorf("%d spill files left", len(ents))
	}

	// The budget all taken, as by other listings in flight.
	budget.TryTake(4 << 20)
	for _, accept := range []string{"application/json", "text/html"} {
		rec := do(h, "GET", "/", "Accept", accept)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s with the budget taken: %d, Retry-After %q; want 503 with one", accept, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
	budget.Give(4 << 20)
	if rec := do(h, "HEAD", "/"); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD: %d", rec.Code)
	}
}
