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
		files, client int
		ok            bool
	}{
		{"1000000×40", 1000000, 40, true},
		{"20000×8", 20000, 8, true},
		{"20000", 0, 0, false},
		{"0×8", 0, 0, false},
		{"x×8", 0, 0, false},
	} {
		f, cl, err := parseListingCase(c.in)
		if (err == nil) != c.ok || c.ok && (f != c.files || cl != c.client) {
			t.Errorf("%q: %d, %d, %v", c.in, f, cl, err)
		}
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
