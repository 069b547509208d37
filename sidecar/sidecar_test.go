package sidecar_test

import (
	"context"
	"slices"
	"testing"

	"largo"
	"largo/disk"
	"largo/record"
	"largo/sidecar"
)

// records returns the records of files of a real folder store.
func records(t *testing.T) *record.Files {
	t.Helper()
	st, err := disk.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return record.NewFiles(record.New(st.State(), record.Options{}), record.FilesOptions{})
}

func TestRecorded(t *testing.T) {
	ctx := context.Background()
	st := records(t)
	c := sidecar.NewChecker(st)
	gz := largo.Info{Name: "data.csv.gz", Size: 10, ETag: `"gz-1"`}

	// Nothing recorded: a file of its own.
	if ok, err := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-1"`); ok || err != nil {
		t.Fatalf("unrecorded: %v, %v", ok, err)
	}
	// The original's record names the sidecar, when it is of its source.
	st.Put(ctx, record.File{Name: "dir/data.csv", ETag: `"csv-1"`, Size: 40})
	if err := sidecar.Put(ctx, st, "dir/data.csv.gz", gz, `"csv-1"`); err != nil {
		t.Fatal(err)
	}
	if orig, _ := st.Get(ctx, "dir/data.csv"); !slices.Equal(orig.Sidecars, []string{".gz"}) {
		t.Errorf("the original's record names %q", orig.Sidecars)
	}
	if ok, err := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-1"`); !ok || err != nil {
		t.Fatalf("recorded: %v, %v", ok, err)
	}
	// The original changed: no longer its encoding, but still largo's.
	if ok, _ := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-2"`); ok {
		t.Error("a sidecar of an older original was taken")
	}
	if rec, ours, err := c.Of(ctx, "dir/data.csv.gz", gz); !ours || err != nil || rec.Source != `"csv-1"` {
		t.Errorf("Of a stale sidecar: %+v, %v, %v", rec, ours, err)
	}
	// The sidecar was replaced: a file of its own.
	replaced := gz
	replaced.ETag = `"gz-2"`
	if ok, _ := c.Recorded(ctx, "dir/data.csv.gz", replaced, `"csv-1"`); ok {
		t.Error("a replaced sidecar was taken")
	}
	if _, ours, _ := c.Of(ctx, "dir/data.csv.gz", replaced); ours {
		t.Error("a replaced sidecar is still largo's")
	}
	// Another name with the same ETags has no record.
	if ok, _ := c.Recorded(ctx, "other/data.csv.gz", gz, `"csv-1"`); ok {
		t.Error("a record answered for another name")
	}
	if err := st.Delete(ctx, "dir/data.csv.gz"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.Recorded(ctx, "dir/data.csv.gz", gz, `"csv-1"`); ok {
		t.Error("a removed record still answered")
	}
	if err := sidecar.Put(ctx, st, "x.gz", largo.Info{}, `"csv-1"`); err == nil {
		t.Error("a record without an ETag was written")
	}
}

func TestNoState(t *testing.T) {
	c := sidecar.NewChecker(nil)
	if ok, err := c.Recorded(context.Background(), "a.gz", largo.Info{ETag: `"x"`}, `"y"`); ok || err != nil {
		t.Fatalf("without a state area: %v, %v", ok, err)
	}
}
