package sidecar_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"largo"
	"largo/disk"
	"largo/ingest"
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
	record := func(name, source string) {
		t.Helper()
		if err := sidecar.Put(ctx, st.State(), name, info(name), source); err != nil {
			t.Fatal(err)
		}
	}
	log := info("log.txt")
	record("log.txt.gz", log.ETag)
	record("log.txt.br", `"an older log.txt"`)

	for _, tt := range []struct {
		any  bool
		ch   ingest.Change
		want []string
	}{
		{false, ingest.Change{Name: "log.txt", Was: log}, []string{"log.txt.br", "log.txt.gz"}},
		{false, ingest.Change{Name: "log.txt", Was: log, Now: log}, []string{"log.txt.br"}},
		{false, ingest.Change{Name: "log.txt"}, []string{"log.txt.br", "log.txt.gz"}},
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
		pol := sidecar.NewPolicy(sidecar.NewChecker(st.State(), sidecar.Options{}), tt.any, mediaType)
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

	// A sidecar removed takes its record along.
	pol := sidecar.NewPolicy(sidecar.NewChecker(st.State(), sidecar.Options{}), false, mediaType)
	f := sidecar.NewFollower(pol, st, nil)
	f.Removed(ctx, "log.txt.gz", errors.New("locked"))
	if _, err := sidecar.Get(ctx, st.State(), "log.txt.gz"); err != nil {
		t.Errorf("the record of a sidecar left in place went: %v", err)
	}
	f.Removed(ctx, "log.txt.gz", nil)
	if _, err := sidecar.Get(ctx, st.State(), "log.txt.gz"); !errors.Is(err, largo.ErrNotFound) {
		t.Errorf("the record of a removed sidecar: %v", err)
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

// TestFollowFolderMoved: the records of the sidecars below a folder that
// moved go to their new names, so that they stay largo's and are sent
// for their files there; one whose sidecar changed in the move goes.
func TestFollowFolderMoved(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	text := strings.Repeat("a line of text\n", 200)
	for name, body := range map[string]string{"d1/a.txt": text, "d1/a.txt.gz": "gz", "d1/sub/b.txt": text, "d1/sub/b.txt.gz": "gz", "d1/sub/b.txt.br": "br"} {
		writeFile(t, dir, name, body)
	}
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, side := range []string{"d1/a.txt.gz", "d1/sub/b.txt.gz", "d1/sub/b.txt.br"} {
		base, _, _ := largo.SidecarBase(side)
		orig, _ := st.Stat(ctx, base)
		sin, _ := st.Stat(ctx, side)
		if err := sidecar.Put(ctx, st.State(), side, sin, orig.ETag); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Rename(ctx, "d1", "d2"); err != nil {
		t.Fatal(err)
	}
	// One changed on the way.
	writeFile(t, dir, "d2/sub/b.txt.br", "other")
	pol := sidecar.NewPolicy(sidecar.NewChecker(st.State(), sidecar.Options{}), false, mediaType)
	sidecar.NewFollower(pol, st, nil).Moved(ctx, "d1", "d2")
	for side, want := range map[string]bool{"d2/a.txt.gz": true, "d2/sub/b.txt.gz": true, "d2/sub/b.txt.br": false} {
		base, _, _ := largo.SidecarBase(side)
		orig, _ := st.Stat(ctx, base)
		sin, _ := st.Stat(ctx, side)
		if ok, err := pol.Serves(ctx, side, sin, orig); ok != want || err != nil {
			t.Errorf("%s after the move: sent %v, %v; want %v", side, ok, err, want)
		}
	}
	for _, old := range []string{"d1/a.txt.gz", "d1/sub/b.txt.gz", "d1/sub/b.txt.br", "d2/sub/b.txt.br"} {
		if _, err := sidecar.Get(ctx, st.State(), old); !errors.Is(err, largo.ErrNotFound) {
			t.Errorf("a record of %s after the move: %v", old, err)
		}
	}
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
