package lab

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseListingCase(t *testing.T) {
	for _, c := range []struct {
		in            string
		format        string
		files, client int
		ok            bool
	}{
		{"json 1000000×40", "json", 1000000, 40, true},
		{"html 20000×1", "html", 20000, 1, true},
		{"1000000×40", "", 0, 0, false},
		{"xml 20000×8", "", 0, 0, false},
		{"json 20000", "", 0, 0, false},
		{"json 0×8", "", 0, 0, false},
		{"json x×8", "", 0, 0, false},
		{"json 10×0", "", 0, 0, false},
	} {
		format, f, cl, err := parseListingCase(c.in)
		if (err == nil) != c.ok || c.ok && (format != c.format || f != c.files || cl != c.client) {
			t.Errorf("%q: %q, %d, %d, %v", c.in, format, f, cl, err)
		}
	}
}

// TestListingCases: one case per format and concurrency, of the
// configured folder.
func TestListingCases(t *testing.T) {
	got := listingScenario.cases(Config{Files: 500, Concurrency: []int{1, 40}})
	want := []string{"json 500×1", "json 500×40", "html 500×1", "html 500×40"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("cases %q, want %q", got, want)
	}
}

// TestFolderMadeOnce makes the listing scenario's folder and checks that
// a second call reuses it.
func TestFolderMadeOnce(t *testing.T) {
	d := &dataSet{dir: t.TempDir()}
	cfg := Config{Progress: io.Discard}
	dir, err := d.folder(context.Background(), cfg, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// The files, and the warm-up file every served folder holds.
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1001 || ents[0].Name() != "f0000000" || ents[999].Name() != "f0000999" || !strings.HasPrefix(ents[1000].Name(), "warm-up-") {
		t.Fatalf("%d files, first %v", len(ents), ents[0])
	}
	os.Remove(filepath.Join(dir, "f0000000"))
	if _, err := d.folder(context.Background(), cfg, 1000); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1000 {
		t.Fatalf("the folder was made again: %d files", len(ents))
	}
}
