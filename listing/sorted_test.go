package listing_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"largo"
	"largo/disk"
	"largo/listing"
)

// TestSorted: a walk of a Sorted store visits each folder's entries by
// name, and each folder's filter sees that folder's entries alone, in
// that order, though the walk goes down between them.
func TestSorted(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"z", "a.txt", "a.txt.gz", "m/b", "m/b.gz", "m/a.gz", "m/n/c", "y.gz"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fed := map[string][]string{}
	// keep drops NAME.gz where the folder had NAME before it.
	keep := func(d string) func(largo.Info) bool {
		var seen []string
		return func(in largo.Info) bool {
			fed[d] = append(fed[d], in.Name)
			seen = append(seen, in.Name)
			return !slices.Contains(seen, strings.TrimSuffix(in.Name, ".gz")) || !strings.HasSuffix(in.Name, ".gz")
		}
	}
	sorted := listing.Config{Dir: t.TempDir()}.Sorted(st, listing.ByName, keep)
	var got []string
	err = largo.WalkDir(context.Background(), sorted, "", func(name string, _ largo.Info, err error) error {
		got = append(got, name)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "a.txt", "m", "m/a.gz", "m/b", "m/n", "m/n/c", "y.gz", "z"}
	if !slices.Equal(got, want) {
		t.Errorf("walked %q\nwant %q", got, want)
	}
	wantFed := map[string][]string{"": {"a.txt", "a.txt.gz", "m", "y.gz", "z"}, "m": {"a.gz", "b", "b.gz", "n"}, "m/n": {"c"}}
	for d, names := range wantFed {
		if !slices.Equal(fed[d], names) {
			t.Errorf("the filter of %q was fed %q; want %q", d, fed[d], names)
		}
	}
}
