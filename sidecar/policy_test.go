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
	"largo/sidecar"
)

// TestShowsHides: listings hide a file's fresh sidecar (under --sidecars
// any) and nothing else with a sidecar's name; a walk that looks
// originals up by name hides the same.
func TestShowsHides(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 2048)
	old, fresh := time.Unix(1e9, 0), time.Unix(2e9, 0)
	for _, f := range []struct {
		name, body string
		mtime      time.Time
	}{
		{"a.txt", big, old},
		{"a.txt.gz", "gz", fresh},     // a.txt's
		{"a.txt.zst", "zst", old},     // as old as a.txt: not older, so a.txt's
		{"b.txt", big, fresh},         //
		{"b.txt.br", "br", old},       // older than b.txt: a file of its own
		{"lone.tar.gz", "tar", fresh}, // nothing beside it
		{"small.txt", "s", old},       // too small to be sent compressed
		{"small.txt.gz", "gz", fresh}, //
		{"pic.jpg", big, old},         // a type never compressed
		{"pic.jpg.gz", "gz", fresh},   //
	} {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.body), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, f.mtime, f.mtime)
	}
	os.Mkdir(filepath.Join(dir, "c"), 0o755)
	os.WriteFile(filepath.Join(dir, "c.gz"), []byte("gz"), 0o644) // beside a folder
	st, err := disk.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	media := func(in largo.Info) string {
		if strings.HasSuffix(in.Name, ".jpg") {
			return "image/jpeg"
		}
		return "text/plain"
	}
	p := sidecar.NewPolicy(nil, true, media)
	ctx := context.Background()
	shows := p.Shows(ctx, "", nil)
	var entries []largo.Info
	for in, err := range st.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, in)
	}
	slices.SortFunc(entries, func(a, b largo.Info) int { return strings.Compare(a.Name, b.Name) }) // as listings sort them
	var shown, kept []string
	for _, in := range entries {
		if shows(in) {
			shown = append(shown, in.Name)
		}
		if !p.Hides(ctx, st, "", in, nil) {
			kept = append(kept, in.Name)
		}
	}
	want := "a.txt b.txt b.txt.br c c.gz lone.tar.gz pic.jpg pic.jpg.gz small.txt small.txt.gz"
	if got := strings.Join(shown, " "); got != want {
		t.Errorf("Shows: %s; want %s", got, want)
	}
	if got := strings.Join(kept, " "); got != want {
		t.Errorf("Hides keeps %s; want %s", got, want)
	}
}
