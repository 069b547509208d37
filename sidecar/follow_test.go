package sidecar_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"largo"
	"largo/disk"
	"largo/ingest"
	"largo/record"
	"largo/sidecar"
)

// TestFollow: what a change to a file leaves behind is its sidecars as
// the policy says, and never a file of its own with a sidecar's name.
func TestFollow(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	text := strings.Repeat("a line of text\n", 200)
	at := time.Unix(2e9, 0)
	for _, f := range []struct {
		name, body string
		age        time.Duration // before at; negative: after
	}{
		{"log.txt", text, 0},
		{"log.txt.gz", "gz", -time.Second},         // recorded from log.txt
		{"log.txt.br", "br", time.Second},          // recorded from an older log.txt
		{"log.txt.zst", "zst", -time.Second},       // a fresh file of its own
		{"small.txt", "small", 0},                  // too small to be compressed
		{"small.txt.gz", "gz", -time.Second},       //
		{"photo.png", text, 0},                     // a type never compressed
		{"photo.png.gz", "gz", -time.Second},       //
		{"old.csv", text, 0},                       //
		{"old.csv.gz", "an older file", time.Hour}, // older than old.csv
		{"moved.csv", text, 2 * time.Hour},         // moved in with an older time
		{"moved.csv.gz", "gz", 0},                  // there before it came
		{"dir/x", "x", 0},                          //
	} {
		when := at.Add(-f.age)
		os.Chtimes(writeFile(t, dir, f.name, f.body), when, when)
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	info := func(name string) largo.Info {
		t.Helper()
		in, err := st.Stat(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	files := record.NewFiles(record.New(st.State(), record.Options{}), record.FilesOptions{})
	recordSidecar := func(name, source string) {
		t.Helper()
		if err := sidecar.Put(ctx, files, name, info(name), source); err != nil {
			t.Fatal(err)
		}
	}
	log := info("log.txt")
	recordSidecar("log.txt.gz", log.ETag)
	recordSidecar("log.txt.br", `"an older log.txt"`)
	gzOnly := &record.File{Name: "log.txt", ETag: log.ETag, Sidecars: []string{".gz"}}

	for _, tt := range []struct {
		any  bool
		ch   ingest.Change
		want []string
	}{
		{false, ingest.Change{Name: "log.txt", Was: log}, []string{"log.txt.br", "log.txt.gz"}},
		{false, ingest.Change{Name: "log.txt", Was: log, Now: log}, []string{"log.txt.br"}},
		{false, ingest.Change{Name: "log.txt"}, []string{"log.txt.br", "log.txt.gz"}},
		// The version's record names the sidecars written of it: only
		// those are looked at; a file just created has none left.
		{false, ingest.Change{Name: "log.txt", Was: log, Record: gzOnly}, []string{"log.txt.gz"}},
		{false, ingest.Change{Name: "log.txt", Was: log, Record: &record.File{Name: "log.txt", ETag: log.ETag}}, nil},
		{false, ingest.Change{Name: "log.txt", Now: log}, nil},
		{false, ingest.Change{Name: "old.csv", Was: info("old.csv")}, nil},
		{true, ingest.Change{Name: "log.txt", Was: log}, []string{"log.txt.gz", "log.txt.zst"}},
		{true, ingest.Change{Name: "log.txt"}, nil},
		{true, ingest.Change{Name: "small.txt", Was: info("small.txt")}, nil},
		{true, ingest.Change{Name: "photo.png", Was: info("photo.png")}, nil},
		{true, ingest.Change{Name: "old.csv", Was: info("old.csv")}, nil},
		{true, ingest.Change{Name: "old.csv", Now: info("old.csv")}, nil},
		{true, ingest.Change{Name: "moved.csv", Now: info("moved.csv")}, []string{"moved.csv.gz"}},
		{true, ingest.Change{Name: "dir", Was: info("dir")}, nil},
	} {
		pol := sidecar.NewPolicy(sidecar.NewChecker(files), tt.any, mediaType)
		var got []string
		for _, s := range sidecar.NewFollower(pol, st, nil).Follow(ctx, tt.ch) {
			if s.ETag != info(s.Name).ETag {
				t.Errorf("%s named with ETag %s, not its own", s.Name, s.ETag)
			}
			got = append(got, s.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("any %v, %s %q->%q: %v; want %v", tt.any, tt.ch.Name, tt.ch.Was.Name, tt.ch.Now.Name, got, tt.want)
		}
	}
}

// mediaType is the media types of the test's names.
func mediaType(in largo.Info) string {
	switch filepath.Ext(in.Name) {
	case ".txt":
		return "text/plain"
	case ".csv":
		return "text/csv"
	case ".png":
		return "image/png"
	}
	return ""
}

// writeFile writes body to the file name below dir, making its folders,
// and returns its path.
func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
